# "Mail me my entries": the guest book's entries written with an address are mailed to it
# (SMLserver's Web.Mail.send). The mail goes after the reply (conn.after), so the visitor
# does not wait for the mail server. Without a mail_url setting the message is printed on
# the server's console instead of sent (docs/mail.md).
from pyweb import csrf_field, db, mail, qq
from pyweb.forms import check, get_email, wrap_fail

from _layout import page

if conn.method == "POST":
    email = wrap_fail(get_email)("email")
    check()  # not an address: one 400 page saying so, and nothing is sent
    rows = await db.list(qq("select name, comment from guest where email = {email} order by id",
                            email=email))  # fmt: skip
    if rows:
        text = "\n\n".join(f"{row['name']} wrote:\n{row['comment']}" for row in rows)
        conn.after(mail.send, email, "Your guest book entries", text)
    conn.return_(page("Mail me my entries", qq(
        "<p>If the guest book has entries written with {email}, they are on their way.</p>"
        '<p><a href="/guest">Back to the guest book</a></p>', email=email)))
else:
    conn.return_(page("Mail me my entries", qq("""
<form action="/guest_mail" method="post">{token}
<p><label>Your e-mail address <input name="email" type="email" maxlength="100"></label>
<input type="submit" value="Mail them to me"></p>
</form>""", token=csrf_field())))
