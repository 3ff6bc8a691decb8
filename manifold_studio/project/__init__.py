"""A saved project: the session state written to and read from project files, and autosave recovery (above session)."""
