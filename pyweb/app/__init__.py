"""pyweb.app: routing a request to what answers it (static files now; page scripts and services later)."""
