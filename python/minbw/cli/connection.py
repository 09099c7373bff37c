"""The command line's cloud: the global ``--os-*`` options (osc-lib's, as ``openstack`` reads them, with clouds.yaml
and the ``OS_*`` variables), validated and connected only when a command first needs the cloud; and what a
failed connection means, in one line naming the cloud and the fix in the command line's words."""

from __future__ import annotations

import os

from keystoneauth1 import exceptions as ksa_exceptions
from openstack import connection
from openstack import exceptions as sdk_exceptions

from minbw.errors import CloudError, InvalidInput
from minbw.usecases.connection import OptionNames, explain_connection_failure, one_line

NAMES = OptionNames(
    cacert="--os-cacert (cacert: in clouds.yaml)",
    insecure="--insecure (verify: false in clouds.yaml)",
    cloud="--os-cloud / OS_CLOUD",
    auth="clouds.yaml / the --os-* options",
)
_CONNECTED: dict[int, object] = {}  # id(app) -> the CloudRegion of its last connection, to name it when a call fails


def connect(app, cloud: str | None = None, *, of=None):
    """The openstacksdk Connection of the global options (``cloud``: another clouds.yaml entry, e.g. the
    service user's), or of the cloud region ``of`` (:func:`region`'s). Unknown clouds and incomplete auth are one
    line with the fix."""
    return connection.Connection(config=of if of is not None else region(app, cloud))


def region(app, cloud: str | None = None):
    """The openstacksdk cloud region (``CloudRegion``) of the global options (``cloud``: another clouds.yaml entry),
    validated: what :func:`connect` connects. Unknown clouds and incomplete auth are one line with the fix."""
    config = app.cloud_config
    try:
        if cloud is None:
            region = config.get_one(cloud=app.options.cloud, argparse=app.options, validate=True)
        else:
            region = config.get_one(cloud=cloud, validate=True)
    except sdk_exceptions.ConfigException as e:
        raise CloudError(
            f"{str(e).rstrip('.')}. Fix: name a cloud of {_config_files(config)} with --os-cloud or "
            f"OS_CLOUD, or give --os-auth-url and the credentials"
        ) from None
    except ksa_exceptions.ClientException as e:  # e.g. an auth plugin that is missing an option
        raise CloudError(
            f"{type(e).__name__}: {one_line(e)}. Fix: complete the cloud's auth in clouds.yaml or the --os-* options"
        ) from None
    _CONNECTED[id(app)] = region
    return region


def _config_files(config) -> str:
    found = [f for f in getattr(config, "_config_files", ()) if os.path.exists(f)]
    return " or ".join(found) if found else "clouds.yaml (none found: set OS_CLIENT_CONFIG_FILE)"


def explain(app, e: Exception) -> CloudError | None:
    """A connection or authentication failure as one line naming the cloud and the fix; None for others."""
    return explain_connection_failure(e, _CONNECTED.get(id(app)), NAMES)


def placement_version(app) -> str | None:
    """The microversion ``--os-placement-api-version`` (OS_PLACEMENT_API_VERSION) pins; None when it is
    unset or only a major version ("1", osc-placement's default: negotiate)."""
    value = getattr(app.options, "os_placement_api_version", None)
    if not value or "." not in str(value):
        return None
    from minbw.usecases.inputs import microversion  # here: a command that pins none starts without the input parsers

    try:
        return microversion(value)
    except ValueError:
        raise InvalidInput(
            f"--os-placement-api-version (OS_PLACEMENT_API_VERSION): expected a microversion "
            f"MAJOR.MINOR, e.g. 1.39, got {value!r}"
        ) from None
