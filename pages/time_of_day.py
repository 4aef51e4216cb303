# SMLserver §2, the first example: the time of day, computed for every request.
#
#   val time_of_day = Date.fmt "%H.%M.%S" (Date.fromTimeLocal(Time.now()))
#   val _ = Ns.Conn.return ("<html>... The time of day is " ^ time_of_day ^ ". ...")
import time

time_of_day = time.strftime("%H.%M.%S")
conn.return_(
    "<!DOCTYPE html><html><head><title>Time of day</title>"
    '<link rel="stylesheet" href="/style.css"></head>'
    "<body><h2>Time of day</h2>"
    f"<p>The time of day is {time_of_day}.</p><hr>"
    '<p><i>Served by <a href="/">pyweb</a></i></p>'
    "</body></html>"
)
