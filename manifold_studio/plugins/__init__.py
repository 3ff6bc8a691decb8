"""The plugin host and the plugin manager (Qt-free): discovery, wheels, the user plugin folder, self-check."""
