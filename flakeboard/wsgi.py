import logging
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flakeboard.settings")
application = get_wsgi_application()

# The served CI client, assembled at start-up rather than in a request; a stale built file
# on disk (which is never served) is said in the log.
from runs.api.download import served_client, stale_file  # noqa: E402

served_client()
if why := stale_file():
    logging.getLogger("flakeboard").warning(why)
