# SMLserver §4: guest_add "uses the FormVar functionality for extracting form variables and
# the function Db.dml to add an entry in the guest table", then sends the browser back.
# The values are antiquotes of the SQL quotation, so they are bound parameters: a name
# like "x'); drop table guest; --" is stored as it is and never runs.
from pyweb import db, qq
from pyweb.forms import check, get_email, get_string, wrap_fail

# A change is a POST (a link, a prefetch or a crawler's GET changes nothing), and every POST
# carries the CSRF token of guest.py's form: anything else is answered 405.
conn.require_method("POST")
name = wrap_fail(get_string)("name", max_length=100)
# The column holds 100 characters; an address may be longer (254), so both checks.
email = wrap_fail(get_string)("email", max_length=100) and wrap_fail(get_email)("email")
comment = wrap_fail(get_string)("comment", max_length=2000)
check()  # a bad field: one 400 page naming each, and nothing is written

await db.dml(qq("insert into guest (email, name, comment) values ({email}, {name}, {comment})"))
conn.redirect("/guest", 303)  # 303 See Other: the browser GETs the list, a reload does not repost
