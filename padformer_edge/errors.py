"""The one exception type a user can cause.

Anything a person can fix (a bad config, a missing file, a corrupt image, the wrong
checkpoint) is raised as ``UserError`` with a single sentence that names the thing and
the fix. The CLI prints that sentence and exits with status 2 instead of a traceback, so
operators on a line PC see the cause, not the call stack.
"""


class UserError(Exception):
    """A problem the user can fix; ``str(err)`` is the whole message shown to them."""
