# Table 1's "hello": a small constant HTML document. The smallest page there is: one
# constant string (the site's frame written out, as _layout.page would build it), so the
# benchmark measures the server, not page building.
conn.return_(
    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Hello</title>'
    '<link rel="stylesheet" href="/style.css"><link rel="icon" href="/favicon.ico"></head>'
    '<body><header><a href="/">pyweb examples</a></header><main><h1>Hello, world!</h1></main>'
    '<footer><p>Served by <a href="/">pyweb</a>, after SMLserver and Hop. '
    '<a href="/source?file=hello.py" class="source">View the source of this page</a></p>'
    "</footer></body></html>"
)
