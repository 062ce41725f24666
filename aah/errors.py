"""The one exception type whose message is shown to the user as is."""


class AahError(Exception):
    """A failure the user can fix; its message is one line naming the fix.

    The command line prints it as ``error: <message>`` and exits with status 2,
    never with a traceback.
    """
