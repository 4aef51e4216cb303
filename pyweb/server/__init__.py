"""pyweb.server: the trio HTTP/1.1 server (Marlow §3-§7, Hop §2-§3)."""
