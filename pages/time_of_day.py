# SMLserver §2, the first example: the time of day, computed for every request.
#
#   val time_of_day = Date.fmt "%H.%M.%S" (Date.fromTimeLocal(Time.now()))
#   val _ = Ns.Conn.return ("<html>... The time of day is " ^ time_of_day ^ ". ...")
import time

from pyweb.html import P

from _layout import page

time_of_day = time.strftime("%H.%M.%S")
conn.return_(page("Time of day", P(f"The time of day is {time_of_day}.")))
