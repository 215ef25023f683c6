"""Release tools run on the workstation, never on a line PC: writing the shipped generic
model and its card (``ship``). They import the runtime package; it never imports them."""
