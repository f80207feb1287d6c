"""`python -m client.cli`."""

from client.cli import main

main()
