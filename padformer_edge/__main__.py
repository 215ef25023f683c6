"""Allow ``python -m padformer_edge`` where the console script is not on PATH."""

from padformer_edge.cli.entry import main

main()
