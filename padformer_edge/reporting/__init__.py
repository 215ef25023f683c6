"""What the product tells people: structured logs (``log``), a native library's output
kept out of a command's own (``native_output``), and numbers written for people
(``numbers``)."""
