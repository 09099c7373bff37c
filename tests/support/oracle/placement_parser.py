"""Placement's own parsing of a ``GET /allocation_candidates`` query string: the first steps of
placement.handlers.allocation_candidate.list_allocation_candidates (the schema of that microversion,
RequestWideParams, RequestGroup.dict_from_request, the group_policy rule). Raises webob's HTTPBadRequest
where Placement answers 400. Placement's ``jsonschema.validate`` first checks the schema itself against its metaschema,
then the query; its schemas are constants, so here each is checked once, the first time it is used, as the tests'
session Placement does (tests/support/placement_serve.py: the same validator, the same error), and every query is
still validated against it: that check was 85 % of a parse (10.8 of 12.8 s under cProfile, 582 parses).
"""
from __future__ import annotations

import jsonschema
import microversion_parse
import webob
from placement import lib as placement_lib
from placement import microversion as placement_mv
from placement import util as placement_util
from placement.handlers import allocation_candidate as ac_handler

from tests.support.placement_serve import validate as validate_checking_each_schema_once


def placement_parse(query: str, microversion: str):
    """(groups by suffix, request-wide params) as Placement reads ``query`` at ``microversion``."""
    req = webob.Request.blank("/allocation_candidates?" + query)
    version = microversion_parse.extract_version(
        {"openstack-api-version": f"placement {microversion}"}, "placement", placement_mv.VERSIONS)
    req.environ[placement_mv.MICROVERSION_ENVIRON] = version
    placement_jsonschema_validate, jsonschema.validate = jsonschema.validate, validate_checking_each_schema_once
    try:
        placement_util.validate_query_params(req, ac_handler._get_schema(version))
    finally:
        jsonschema.validate = placement_jsonschema_validate
    rqparams = placement_lib.RequestWideParams.from_request(req)
    groups = placement_lib.RequestGroup.dict_from_request(req, rqparams)
    if not rqparams.group_policy and sum(g.use_same_provider for g in groups.values()) > 1:
        raise webob.exc.HTTPBadRequest("group_policy required")
    return groups, rqparams


def refusal(query: str, microversion: str) -> str:
    """Placement's 400 message for ``query`` ("" when it parses)."""
    try:
        placement_parse(query, microversion)
    except webob.exc.HTTPException as e:
        return str(e) or e.explanation or "400"
    return ""
