"""Files (Qt-free): atomic writes, model files, project files, export paths."""
