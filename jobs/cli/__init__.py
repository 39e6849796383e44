"""The command line, `python -m jobs COMMAND`: the parser and `work` (main.py), the commands that look at
and change the queue (commands.py, limit_commands.py) and the tables they print (tables.py). It may
import every layer below it: core/, store/ and runtime/.
"""
