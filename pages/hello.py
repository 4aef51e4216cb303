# Table 1's "hello": a small constant HTML document. The smallest page there is.
conn.return_(
    "<!DOCTYPE html><html><head><title>Hello</title></head>"
    "<body><h1>Hello, world!</h1></body></html>"
)
