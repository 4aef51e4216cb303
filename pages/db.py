# Table 1's "db": connect to the database (a handle from the pool) and run a simple query.
from pyweb import db
from pyweb.html import P

from _layout import page

entries = await db.one_field("select count(*) from guest")
conn.return_(page("Database", P(f"The guest book has {entries} entries.")))
