"""Training data: where the good images of each class are, and how samples are built."""
