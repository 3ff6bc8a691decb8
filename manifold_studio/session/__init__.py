"""The Qt-free session model: data sets, runs and their records, isolated fits, recovery, selections."""
