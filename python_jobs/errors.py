class UserFacingError(Exception):
    """An error whose message is the whole story (bad input, missing table): printed without a traceback."""
