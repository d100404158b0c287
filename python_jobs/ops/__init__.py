"""Operations on a live warehouse: the writer lock, leftover cleanup and compaction."""
