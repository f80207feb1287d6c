"""The log cleaner (Kafka's LogCleaner): compacted logs keep the latest record of each key.

- ``rules``: which log is cleaned, which part of it, in which groups of segments, and what of a batch survives (pure);
- ``offset_map``: each key of the dirty part and its latest offset, in bounded memory (pure);
- ``config``: the cleaner's broker settings (pure).
"""
