#!/usr/bin/env python3
"""minicloud smoke test: guaranteed minimum bandwidth end to end (seed 003's demo).

Run after `tests/support/minicloud/cloud.sh up`, with any Python that has openstacksdk
(/work/main/.venv/bin/python or /work/main/.venv-cloud/bin/python):

    python tests/support/minicloud/smoke.py [--keep] [--vnic-type normal|direct] [--expect-novalidhost]

Creates net0 (vlan/physnet0/100) + subnet0, QoS policy qp0 with minimum_bandwidth 1000 kbps
egress+ingress, port port-normal-qos with it, a tiny Glance image, a flavor (1 vCPU, 256 MB,
1 GB), boots vm0 on the port, waits ACTIVE, prints the port's resource_request and
binding:profile and the Placement allocation, then deletes the server and shows that the
allocation and usage are freed. Exit status 0 only when every expectation held.
--expect-novalidhost: the boot is expected to fail with NoValidHost (neutron's placement
plugin off and no external provider sync).
"""
import argparse
import json
import os
import sys
import time
import uuid
import warnings

warnings.filterwarnings('ignore')

import openstack  # noqa: E402

OVS_NS = uuid.UUID('87ee7d5c-73bb-11e8-9008-c4d987b2a692')
SRIOV_NS = uuid.UUID('87f1895c-73bb-11e8-9008-c4d987b2a692')
PM = '1.36'  # placement microversion used for reads
EGR, IGR = 'NET_BW_EGR_KILOBIT_PER_SEC', 'NET_BW_IGR_KILOBIT_PER_SEC'

T0 = time.time()


def log(msg, *args):
    print('[smoke %5.1fs] %s' % (time.time() - T0, msg % args if args else msg), flush=True)


def show(title, obj):
    print('--- %s\n%s' % (title, json.dumps(obj, indent=1, sort_keys=True, default=str)), flush=True)


def pget(conn, path):
    r = conn.placement.get(path, microversion=PM)
    r.raise_for_status()
    return r.json()


def cleanup(conn, names):
    srv = conn.compute.find_server(names['server'])
    if srv:
        conn.compute.delete_server(srv)
        conn.compute.wait_for_delete(srv, wait=60)
    port = conn.network.find_port(names['port'])
    if port:
        conn.network.delete_port(port)
    pol = conn.network.find_qos_policy(names['policy'])
    if pol:
        conn.network.delete_qos_policy(pol)
    net = conn.network.find_network(names['network'])
    if net:
        for sn in conn.network.subnets(network_id=net.id):
            conn.network.delete_subnet(sn)
        conn.network.delete_network(net)
    fl = conn.compute.find_flavor(names['flavor'])
    if fl:
        conn.compute.delete_flavor(fl)
    img = conn.image.find_image(names['image'])
    if img:
        conn.image.delete_image(img)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--cloud', default=os.environ.get('OS_CLOUD', 'minicloud'))
    ap.add_argument('--hypervisor', default=os.environ.get('MINICLOUD_HYPERVISOR', 'devstack0'))
    ap.add_argument('--vnic-type', default='normal', choices=['normal', 'direct'])
    ap.add_argument('--device', default=None,
                    help='device whose provider should get the allocation (default br-test for '
                         'normal; for direct ens5, or <hypervisor>-ens1 with MINICLOUD_SRIOV_COMPUTE=1)')
    ap.add_argument('--kbps', type=int, default=1000)
    ap.add_argument('--keep', action='store_true', help='leave the resources in place')
    ap.add_argument('--expect-novalidhost', action='store_true')
    ap.add_argument('--timeout', type=int, default=120)
    args = ap.parse_args()

    if 'OS_CLIENT_CONFIG_FILE' not in os.environ:
        here = os.path.dirname(os.path.abspath(__file__))
        os.environ['OS_CLIENT_CONFIG_FILE'] = os.path.join(
            here, '..', '..', '..', '.state', 'minicloud', 'clouds.yaml')
    conn = openstack.connect(cloud=args.cloud)
    names = {'network': 'net0', 'subnet': 'subnet0', 'policy': 'qp0',
             'port': 'port-%s-qos' % args.vnic_type, 'image': 'minicloud-tiny',
             'flavor': 'cirros256', 'server': 'vm0'}
    failures = []

    def expect(cond, what):
        log('%s: %s', 'OK  ' if cond else 'FAIL', what)
        if not cond:
            failures.append(what)

    cleanup(conn, names)

    net = conn.network.create_network(
        name=names['network'], provider_network_type='vlan',
        provider_physical_network='physnet0', provider_segmentation_id=100)
    conn.network.create_subnet(name=names['subnet'], network_id=net.id, ip_version=4,
                               cidr='10.0.4.0/24')
    pol = conn.network.create_qos_policy(name=names['policy'])
    for d in ('egress', 'ingress'):
        conn.network.create_qos_minimum_bandwidth_rule(pol, min_kbps=args.kbps, direction=d)
    port = conn.network.create_port(name=names['port'], network_id=net.id, qos_policy_id=pol.id,
                                    binding_vnic_type=args.vnic_type)
    log('network %s, policy %s, port %s created', net.id, pol.id, port.id)
    show('port resource_request', port.resource_request)
    rr = port.resource_request or {}
    groups = rr.get('request_groups') or []
    expect(len(groups) == 1 and groups[0]['resources'] == {EGR: args.kbps, IGR: args.kbps},
           'port has a resource_request for %d kbps each way' % args.kbps)
    group_id = groups[0]['id'] if groups else None

    img = conn.image.create_image(name=names['image'], data=b'minicloud tiny image\n',
                                  disk_format='raw', container_format='bare', wait=True)
    log('image %s status %s', img.id, conn.image.get_image(img).status)
    fl = conn.compute.create_flavor(name=names['flavor'], ram=256, vcpus=1, disk=1)

    ns = OVS_NS if args.vnic_type == 'normal' else SRIOV_NS
    dev = args.device
    if not dev:
        if args.vnic_type == 'normal':
            dev = 'br-test'
        elif os.environ.get('MINICLOUD_SRIOV_COMPUTE') == '1':
            dev = '%s-ens1' % args.hypervisor
        else:
            dev = 'ens5'
    want_rp = str(uuid.uuid5(ns, '%s:%s' % (args.hypervisor, dev)))

    t = time.time()
    # on --hypervisor (compute API 2.74+, still through the scheduler): the cloud has two computes
    srv = conn.compute.create_server(name=names['server'], flavor_id=fl.id, image_id=img.id,
                                     networks=[{'port': port.id}], host=args.hypervisor)
    try:
        srv = conn.compute.wait_for_server(srv, status='ACTIVE', wait=args.timeout)
        boot_ok = True
    except Exception as e:  # ResourceFailure / timeout
        boot_ok = False
        srv = conn.compute.get_server(srv.id)
        log('server status %s fault %s (%s)', srv.status, (srv.fault or {}).get('message'),
            type(e).__name__)
    if args.expect_novalidhost:
        expect(not boot_ok and 'No valid host' in ((srv.fault or {}).get('message') or ''),
               'boot fails with NoValidHost')
    else:
        expect(boot_ok, 'server ACTIVE in %.1fs on %s' % (time.time() - t,
                                                          srv.hypervisor_hostname))
    if boot_ok:
        # let the L2 agent emulator report the port up
        for _ in range(40):
            port = conn.network.get_port(port.id)
            if port.status == 'ACTIVE':
                break
            time.sleep(0.5)
        show('port after boot', {'status': port.status, 'binding:host_id': port.binding_host_id,
                                 'binding:vif_type': port.binding_vif_type,
                                 'binding:vnic_type': port.binding_vnic_type,
                                 'binding:profile': port.binding_profile})
        alloc = (port.binding_profile or {}).get('allocation')
        expect(alloc == {group_id: want_rp},
               'binding:profile.allocation maps the group to %s (%s:%s)' % (want_rp, args.hypervisor, dev))
        expect(port.status == 'ACTIVE', 'port status ACTIVE')
        allocs = pget(conn, '/allocations/%s' % srv.id)['allocations']
        show('placement allocations of the server', allocs)
        expect(allocs.get(want_rp, {}).get('resources') == {EGR: args.kbps, IGR: args.kbps},
               'bandwidth allocated on %s' % want_rp)
        show('usages of %s' % want_rp, pget(conn, '/resource_providers/%s/usages' % want_rp))

    if args.keep:
        log('--keep: leaving server %s and friends in place', srv.id)
        return 1 if failures else 0

    conn.compute.delete_server(srv)
    conn.compute.wait_for_delete(srv, wait=60)
    log('server deleted')
    port = conn.network.get_port(port.id)
    show('port after delete', {'status': port.status, 'binding:host_id': port.binding_host_id,
                               'binding:profile': port.binding_profile})
    expect(not (port.binding_profile or {}).get('allocation'), 'binding:profile.allocation cleared')
    if not args.expect_novalidhost:
        rp_allocs = pget(conn, '/resource_providers/%s/allocations' % want_rp)['allocations']
        usages = pget(conn, '/resource_providers/%s/usages' % want_rp)['usages']
        show('allocations of %s after delete' % want_rp, rp_allocs)
        show('usages of %s after delete' % want_rp, usages)
        expect(rp_allocs == {} and all(v == 0 for v in usages.values()), 'allocation freed')
    cleanup(conn, names)
    log('cleaned up')
    print('SMOKE FAILED: %s' % failures if failures else 'SMOKE OK')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
