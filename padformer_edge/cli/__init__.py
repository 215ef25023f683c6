"""Typer commands: each parses its arguments, calls one service function and prints."""
