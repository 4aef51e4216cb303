# The counter that works: the count travels in a cookie, so the browser keeps the state
# and the server keeps none (SMLserver §2.1 lists form variables and cookies beside the
# database and the cache). Each browser counts its own visits; a count shared by every
# visitor belongs in the cache (pyweb.cache) or the database.
visits = conn.cookies.get("visits", "0")
count = int(visits) + 1 if visits.isdigit() and len(visits) < 10 else 1
conn.set_cookie("visits", str(count), max_age=3600)
conn.return_(
    "<!DOCTYPE html><html><head><title>Counter</title></head><body>"
    f"<h1>You visited this page {count} time(s)</h1>"
    '<p>Reload: the count goes up. Compare <a href="/counter">the broken version</a>.</p>'
    "</body></html>"
)
