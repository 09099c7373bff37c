"""Registers services in a fresh Keystone (tests/support/lib/common.sh: keystone_register).

    register_catalog.py AUTH_URL PASSWORD USER[,USER...] NAME:TYPE:URL...

As admin (project admin, domain default, the same password): the project ``service``, the role ``service`` when
missing, each USER (that password, default project service, roles admin and service on it), and each service NAME
of TYPE with its public, internal and admin endpoints at URL in RegionOne.
"""
import sys

from keystoneauth1 import session
from keystoneauth1.identity import v3
from keystoneclient.v3 import client

url, pw, users = sys.argv[1:4]
auth = v3.Password(auth_url=url, username='admin', password=pw, project_name='admin',
                   user_domain_id='default', project_domain_id='default')
ks = client.Client(session=session.Session(auth=auth), interface='public')
svc_project = ks.projects.create('service', 'default', description='service project')
roles = {r.name: r for r in ks.roles.list()}
if 'service' not in roles:
    roles['service'] = ks.roles.create('service')
for user in users.split(','):
    u = ks.users.create(user, domain='default', password=pw, default_project=svc_project)
    for role in ('admin', 'service'):
        ks.roles.grant(roles[role], user=u, project=svc_project)
for service in sys.argv[4:]:
    name, typ, endpoint = service.split(':', 2)
    s = ks.services.create(name, type=typ)
    for iface in ('public', 'internal', 'admin'):
        ks.endpoints.create(s, endpoint, interface=iface, region='RegionOne')
print('catalog registered:', ', '.join(s.split(':', 1)[0] for s in sys.argv[4:]))
