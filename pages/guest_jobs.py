# SMLserver §3 schedules scripts (Web.scheduleDaily); here the guest book's nightly clean-up
# is a function with @pyweb.daily, in a service module (imported once, not served as a page).
# With several workers on a shared cache (Redis) it still runs once a night: the worker that
# takes the night's lease runs it. `pyweb jobs pages` lists it with its last run.
import pyweb
from pyweb import db, qq

KEEP = 1000  # the guest book keeps its newest entries; older ones go at night


@pyweb.daily(hour=3, minute=0)
async def clean_guest_book():
    newest = await db.one_field(qq("select max(id) from guest"))
    if newest is not None and newest > KEEP:
        # Two statements, not a subquery: MySQL refuses a DELETE that reads its own table.
        await db.dml(qq("delete from guest where id <= {cutoff}", cutoff=newest - KEEP))
