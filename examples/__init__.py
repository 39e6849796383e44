"""Small apps that queue jobs on their own transactions, each run by its test in tests/examples/."""
