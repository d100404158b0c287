"""Operations: the warehouse writer lock and the crash-convergence fault suite."""
