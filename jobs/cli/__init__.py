"""The command line, `python -m jobs COMMAND`: the parser and `work` (main.py), the other commands and those
that change the queue (commands.py), and those that print what it holds (reports.py). It may import every
layer below it: core/, store/ and runtime/.
"""
