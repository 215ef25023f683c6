"""The learned comparison (``metric: compare``): the comparator model and its shipped
weights' checkpoint format, its torch scorer and detector, its export to two graphs, and
the torch-free detector that runs those graphs on a line PC."""
