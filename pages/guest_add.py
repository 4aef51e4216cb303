# SMLserver §4: guest_add "uses the FormVar functionality for extracting form variables and
# the function Db.dml to add an entry in the guest table", then sends the browser back.
# The form is declared once (_guest_form.py): parsed here, every bad field named beside its
# box. The values are antiquotes of the SQL quotation, so they are bound parameters: a name
# like "x'); drop table guest; --" is stored as it is and never runs.
from pyweb import db, qq

from _guest_form import GuestEntry, entry_form
from _layout import page

# A change is a POST (a link, a prefetch or a crawler's GET changes nothing), and every POST
# carries the CSRF token of guest.py's form: anything else is answered 405.
conn.require_method("POST")

entry = GuestEntry.parse()
if not entry.ok:
    # 400: the form again with what was typed and each message; nothing is written.
    conn.return_(page("Guest Book", qq("<h2>New comment</h2>\n"), entry_form(entry)), status=400)
    conn.exit()

name, email, comment = entry.name, entry.email, entry.comment
await db.dml(qq("insert into guest (email, name, comment) values ({email}, {name}, {comment})"))
conn.flash("Thank you: your comment is in the guest book.", "success")
conn.redirect("/guest", 303)  # 303 See Other: the browser GETs the list, a reload does not repost
