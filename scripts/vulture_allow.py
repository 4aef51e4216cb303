"""The names vulture reports as unused in pyweb/ that are used, each with the reason.

``make vulture`` runs ``vulture pyweb tests pages benchmarks scripts/vulture_allow.py``: a
name used by a test, a page or a benchmark counts as used, and a name listed here is one
that code outside this repository calls by its name, or public API. Anything else vulture
reports in pyweb/ is dead code: delete it, or add it here with its reason.
tests/test_dead_code.py checks both ways: nothing unexplained, and no name listed here that
vulture has stopped reporting.

This file is read by vulture, never run.
"""

# ruff: noqa
_: object

# -- called by name by Python, a library or a framework ------------------------------------
_.__getattr__  # a module's lazy attributes (PEP 562): pyweb, pyweb.forms, pyweb.testing
_.__aexit__  # runtime/contract.py: a Protocol's async context manager method
_.handle_starttag  # notebook/checks.py: html.parser.HTMLParser calls them
_.handle_endtag
_.handle_data
_.eof_received  # server/asyncio/connection.py: asyncio calls a protocol's methods
_.pause_writing
_.resume_writing
_.abstract  # testing/locust.py: locust reads a user class's abstract, wait_time and tasks
_.Visitor  # testing/visitor_locustfile.py: locust loads the file and finds the user class
_.wait_time
_.look_around
_.interrupt_mode  # notebook/grade.py: jupyter_client reads the kernel spec's
_._iopub_channel  # notebook/grade.py: jupyter_client's property makes a new channel
_._clock_resolution  # runtime/testing.py: trio's MockClock-like clocks read it
_.bufsize  # server/contract.py: a Protocol method's parameter (its name is its type)

# app/routing.py: the router looks each kind up by its name in Router.ROUTES
_._server_route
_._openapi_route
_._stats_route
_._websocket_route
_._service_route
_._script_route
_._template_route
_._source_route
_._pattern_route
_._file_route

# -- public API: for sites and their authors, documented, not called inside pyweb -----------
_.return_file  # app/conn.py: conn.return_file(path), docs/pages.md
_.delete_cookie  # app/conn.py: conn.delete_cookie(name), docs/pages.md
_.exited_at  # app/conn.py: where a page called conn.exit (for its author, in a debugger)
_.key_source  # app/site.py: where the secret key came from (setting, environment, file)
_.applies  # app/traps.py: whether a trap runs for a path (its matches_canonical's plain form)
_.swap_evt  # events/syncvar.py: CML's mSwapEvt (docs/events.md's table)
_.request_evt  # events/library.py: the RPC's request event, as the CML paper's library has it
_.frame_inbound_payload_data  # protocol/websocket_deflate.py: wsproto calls an extension's
_._enabled  # protocol/websocket_deflate.py: wsproto's PerMessageDeflate reads it
