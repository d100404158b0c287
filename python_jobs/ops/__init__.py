"""Operations on a live warehouse: the writer lock, leftover cleanup, compaction and retired folders."""
