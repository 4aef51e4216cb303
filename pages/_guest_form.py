"""The guest book's form, declared once (pyweb.forms.Form): ``guest.py`` shows it and
``guest_add.py`` parses it, and shows it again with the messages when a field is bad.

A library module (its name starts with ``_``): initialised once, never served as a page.
"""

from typing import Annotated

from pyweb.forms import Form, field, get_email, get_string


def get_guest_email(name, *, form=None):
    """An e-mail address that fits the guest table's 100 characters (an address may have
    254): a getter of our own, built from two of FormVar's."""
    return get_string(name, form=form, max_length=100) and get_email(name, form=form)


class GuestEntry(Form):
    name: str = field("Name", max_length=100)
    email: Annotated[str, get_guest_email] = field("E-mail", widget="email")
    comment: str = field("Comment", widget="textarea", max_length=2000)


def entry_form(entry=None):
    """The form (blank, or ``entry`` as typed, with its messages) posting to /guest_add."""
    return (entry or GuestEntry()).render(action="/guest_add", submit="Add")
