"""pyweb_regions: per-request arenas and module snapshots in C, with a pure-Python fallback.

Empty until the regions issue (SMLserver §2.1, §5; Hop §3.1); setup.py is ready to build it.
"""
