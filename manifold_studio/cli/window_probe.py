"""The lines the self-test's window probe prints (the window in a child process says when it is
shown and when the first result is drawn; ``--self-test`` reads them). Qt-free, so the
command line can read them without importing the window."""

SHOWN_MARK = "window-shown"
RESULT_MARK = "first-result"
