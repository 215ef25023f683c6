"""Release tools run on the workstation, never on a line PC: writing the shipped generic
model and its card (``ship``), keeping a docs table's weights as checked float16 copies
(``keep_weights``), reading a card back as a table (``model_card``), and packing what a
lent GPU machine needs (``gpu_bundle``). They import the runtime package; it never
imports them."""
