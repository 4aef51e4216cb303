# Library module of the counter example (docs/regions.md): imported once per process, and
# snapshotted by pyweb right after this code has run. Whatever a request changes here is
# reset after the request (SMLserver §2.1: every request starts from the same state).
hits = 0
recent_peers: list[str] = []
