"""Files the product writes and checks: the one atomic write (``atomic``) and the sha256
of a file (``digest``)."""
