#!/usr/bin/env bash
# minicloud: a real, small OpenStack control plane on 127.0.0.1 for minbw's tests.
#
#   cloud.sh up              wipe state, install if needed, configure, start, wait until ready
#   cloud.sh down            stop every process (own pid files / process groups), incl. MariaDB, RabbitMQ
#   cloud.sh status          one line per process, plus a readiness summary
#   cloud.sh logs [N]        tail (default 30 lines) of every service log
#   cloud.sh restart-agents [HOST]  restart only HOST's two L2 agent emulators (default devstack0; re-read their inis)
#   cloud.sh stop-agents [HOST]     stop HOST's two L2 agent emulators (Neutron sees them dead after agent_down_time)
#   cloud.sh activate-spare  bring the spare compute devstack1 into service (MINICLOUD_SPARE_COMPUTE=1)
#   cloud.sh stop-compute HOST / start-compute HOST   stop / start one nova-compute (a host failure and its return)
#   cloud.sh restart-neutron-api  a new neutron API process (Neutron 29 doubles its segments notifier in a process
#                            once it deleted a network: tests that need Neutron's single count start from here)
#   cloud.sh start-api NAME     start placement, nova-api or neutron-api again after a kill -9 (the soak's heal)
#   cloud.sh stop-placement / start-placement   stop / start the Placement API alone (an outage, and its end)
#   cloud.sh neutron-placement 0|1  OVN variant: restart neutron-server with its placement plugin off / on
#   cloud.sh install         only install (apt + venv); idempotent
#   cloud.sh install-packages  only the Debian packages (apt); idempotent
#   cloud.sh snapshot        take that snapshot now, without starting the cloud (make cloud-install); idempotent
#   cloud.sh snapshot-dir    where `up` keeps (or finds) the snapshot of the migrated databases
#
# Env:
#   MINICLOUD_PLACEMENT_PLUGIN=1|0  enable neutron's `placement` service plugin (default 1)
#   MINICLOUD_L3=0|1                enable neutron's `router` service plugin (routers without an L3 agent: their
#                                   ports stay unbound; tempest's scenario tests connect their networks to one)
#   MINICLOUD_SRIOV_COMPUTE=1|0     nova-compute uses fake.FakeDriverWithPciResources (default 0)
#   MINICLOUD_OVS_INI=path          ini read by the OVS agent emulator   (default .state/minicloud/agents/openvswitch_agent.ini)
#   MINICLOUD_SRIOV_INI=path        ini read by the SR-IOV agent emulator (default .state/minicloud/agents/sriov_agent.ini)
#   MINICLOUD_COMPUTES=2|1|3        fake computes: devstack0 and devstack1 (default 2), devstack0 only, or devstack0,
#                                   devstack1 and devstack2 (a drain with a choice of destinations; not with OVN)
#   MINICLOUD_OVS_INI_N=path        devstackN's OVS agent ini, N=1|2 (default .state/minicloud/agents/devstackN/openvswitch_agent.ini)
#   MINICLOUD_SRIOV_INI_N=path      devstackN's SR-IOV agent ini, N=1|2 (default .state/minicloud/agents/devstackN/sriov_agent.ini)
#   MINICLOUD_SPARE_COMPUTE=0|1     devstack1 comes up as a spare: nova-compute up, mapped and disabled, no agents,
#                                   so no bandwidth; `activate-spare` brings it into service (default 0)
#   MINICLOUD_AGENTS=1|0            start the agent emulators at all (default 1)
#   MINICLOUD_DEBUG=1|0             debug logging of the OpenStack services but Keystone (default 1)
#   MINICLOUD_KEYSTONE_DEBUG=0|1    debug logging of Keystone (default 0: it cost Keystone 15 % of its CPU, and no
#                                   test or wait reads it)
#   MINICLOUD_CHECK_SERVER=1|0      one check.py process answers a command's waits (default 1), or one per wait
#   MINICLOUD_FORKS=1|0             the Nova services and agent emulators forked from the fork servers nova-forks and
#                                   agent-forks, which imported them once (default 1), or a Python each
#   MINICLOUD_STOP_GRACE=seconds    SIGTERM->SIGKILL grace for `down` (default 5)
#   MINICLOUD_SKIP_INSTALL=1        never run apt/pip (fail if something is missing)
#   MINICLOUD_STATE=dir             the cloud's state (default .state/minicloud; another cloud beside it: its own dir,
#                                   in a network namespace of its own, tests/support/netns.py)
#   MINICLOUD_OVN=0|1               ML2/OVN instead of the OVS/SR-IOV agent emulators (tests/support/minicloud/ovn.sh)
#   MINICLOUD_OVN_CMS / MINICLOUD_OVN_CMS_1  devstack0's / devstack1's ovn-cms-options (OVN variant)
#   MINICLOUD_REAL_OVS_AGENT="HOST ..."  these computes run the real neutron-openvswitch-agent on an Open vSwitch of
#                                   their own, and nova-compute plugs VIFs through os-vif (ovs_agent.sh; default none)
# shellcheck disable=SC2034  # the upper-case variables of the templates are read by render (lib/common.sh)
# shellcheck source-path=SCRIPTDIR
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
S=${MINICLOUD_STATE:-$ROOT/.state/minicloud}
VENV=${MINICLOUD_VENV:-$ROOT/.venv-cloud}
AGENTS_DIR=$S/agents
OVS_INI=${MINICLOUD_OVS_INI:-$AGENTS_DIR/openvswitch_agent.ini}
SRIOV_INI=${MINICLOUD_SRIOV_INI:-$AGENTS_DIR/sriov_agent.ini}
OVS_INI=$(realpath -m "$OVS_INI"); SRIOV_INI=$(realpath -m "$SRIOV_INI")
OVS_INI_1=$(realpath -m "${MINICLOUD_OVS_INI_1:-$AGENTS_DIR/devstack1/openvswitch_agent.ini}")
SRIOV_INI_1=$(realpath -m "${MINICLOUD_SRIOV_INI_1:-$AGENTS_DIR/devstack1/sriov_agent.ini}")
OVS_INI_2=$(realpath -m "${MINICLOUD_OVS_INI_2:-$AGENTS_DIR/devstack2/openvswitch_agent.ini}")
SRIOV_INI_2=$(realpath -m "${MINICLOUD_SRIOV_INI_2:-$AGENTS_DIR/devstack2/sriov_agent.ini}")
COMPUTES=${MINICLOUD_COMPUTES:-2}
SPARE=${MINICLOUD_SPARE_COMPUTE:-0}
PLACEMENT_PLUGIN=${MINICLOUD_PLACEMENT_PLUGIN:-1}
L3=${MINICLOUD_L3:-0}
SRIOV_COMPUTE=${MINICLOUD_SRIOV_COMPUTE:-0}
START_AGENTS=${MINICLOUD_AGENTS:-1}
OVN=${MINICLOUD_OVN:-0}
[ "$OVN" = 1 ] && START_AGENTS=0  # ML2/OVN: ovn-controller per compute instead of the L2 agent emulators
DEBUG=$([ "${MINICLOUD_DEBUG:-1}" = 1 ] && echo True || echo False)
KEYSTONE_DEBUG=$([ "${MINICLOUD_KEYSTONE_DEBUG:-0}" = 1 ] && echo True || echo False)
HOSTNAME_NOVA=devstack0
HOST1=devstack1
case $COMPUTES in 1|2|3) ;; *) echo "MINICLOUD_COMPUTES must be 1, 2 or 3, got '$COMPUTES'" >&2; exit 2;; esac
[ "$SPARE" = 1 ] && [ "$COMPUTES" = 1 ] && { echo "MINICLOUD_SPARE_COMPUTE=1 needs MINICLOUD_COMPUTES=2 or 3" >&2; exit 2; }
[ "$OVN" = 1 ] && [ "$COMPUTES" = 3 ] && { echo "MINICLOUD_OVN=1 runs one or two computes, not MINICLOUD_COMPUTES=3" >&2; exit 2; }
# The compute hosts of this cloud, devstack0 .. devstack<COMPUTES-1>; each has its own nova-compute and two agent
# emulators (devstack1 may be a spare).
set_hosts() {
    local i
    HOSTS=()
    for ((i = 0; i < COMPUTES; i++)); do HOSTS+=("devstack$i"); done
}
set_hosts
# Process / log / pid names of a host's processes: devstack0 keeps the single-compute names.
sfx() { [ "$1" = "$HOSTNAME_NOVA" ] && echo "" || echo "-$1"; }
# a host's ini files: devstack0's OVS_INI / SRIOV_INI, devstackN's OVS_INI_N / SRIOV_INI_N
ini_of() {  # ini_of OVS_INI|SRIOV_INI HOST
    local n=${2#devstack} v=$1
    [ "$n" = 0 ] || v=${1}_$n
    echo "${!v}"
}
ovs_ini_of() { ini_of OVS_INI "$1"; }
sriov_ini_of() { ini_of SRIOV_INI "$1"; }

# Ports (all on 127.0.0.1). DB and AMQP use non-default ports so that a packaged
# instance, if any, does not collide.
IP=127.0.0.1
DB_PORT=13306
AMQP_PORT=15673
EPMD_PORT=14369
DIST_PORT=35673
KEYSTONE_PORT=5000
PLACEMENT_PORT=8778
NOVA_PORT=8774
NEUTRON_PORT=9696
GLANCE_PORT=9292

PASS=minicloud-secret
DB_USER=openstack
DB_PASS=openstack-db
TRANSPORT="rabbit://guest:guest@$IP:$AMQP_PORT/"
KS="http://$IP:$KEYSTONE_PORT"

# the library: PY, ETC, LOG, RUN (from S and VENV), DBURL; logging (say, die), templates (render), processes
# (start, alive, stop, fail_service, wait_for, http_ok, uwsgi_ini), the venv, MariaDB and Keystone: shared with
# the production-style Placement
SAY_TAG=minicloud
# shellcheck source=../lib/common.sh
. "$HERE/../lib/common.sh"
T=$HERE/templates  # the configuration templates (render)

PINS=(nova==34.0.0 neutron==29.0.0 keystone==30.0.0 openstack-placement==16.0.0 'glance>=33,<34' pymysql uwsgi)

# ---------------------------------------------------------------- install
apt_install() {
    local need=()
    command -v mariadbd >/dev/null 2>&1 || need+=(mariadb-server)
    [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || need+=(rabbitmq-server)
    # the OVN variant (MINICLOUD_OVN=1): northd and both databases, ovn-controller, Open vSwitch; also what the
    # data-plane tests run (tests/support/dataplane: ovsdb-server, ovs-vswitchd, OVN's northbound schema)
    command -v ovn-northd >/dev/null 2>&1 || need+=(ovn-central)
    command -v ovn-controller >/dev/null 2>&1 || need+=(ovn-host)
    command -v ovs-vswitchd >/dev/null 2>&1 || need+=(openvswitch-switch)
    command -v socat >/dev/null 2>&1 || need+=(socat)  # the real OVS agent's OpenFlow relay (ovs_agent.sh)
    [ ${#need[@]} -eq 0 ] && return 0
    [ "${MINICLOUD_SKIP_INSTALL:-0}" = 1 ] && die "missing Debian packages: ${need[*]}"
    say "apt-get install ${need[*]}"
    apt-get update -q >"$S/install-apt.log" 2>&1 || { tail -20 "$S/install-apt.log"; die "apt-get update failed"; }
    # policy-rc.d or not: we never use the packaged services, only their binaries.
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >>"$S/install-apt.log" 2>&1 \
        || { tail -20 "$S/install-apt.log"; die "apt-get install failed"; }
    # In case a packaged service did get started (non-container hosts), it is not ours:
    # we leave it alone; our instances use their own ports.
}

venv_ok() {
    venv_has nova==34.0.0 neutron==29.0.0 keystone==30.0.0 openstack-placement==16.0.0 'glance==33.*' \
        pymysql uwsgi openstacksdk
}

pip_install() {
    venv_ok && return 0
    [ "${MINICLOUD_SKIP_INSTALL:-0}" = 1 ] && die "venv $VENV missing or wrong versions"
    venv_install venv_ok "$S/install-pip.log" "$HERE/constraints.txt" "${PINS[@]}"
}

ensure_python3_venv() {
    # venv/ensurepip to create the venv; a C compiler and Python.h because uWSGI builds from source
    [ -x "$PY" ] && venv_ok && return 0
    python3 -c 'import venv, ensurepip, os, sysconfig, sys
sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")) else 1)' 2>/dev/null \
        && command -v cc >/dev/null 2>&1 && return 0
    [ "${MINICLOUD_SKIP_INSTALL:-0}" = 1 ] && die "python3-venv / python3-dev / a C compiler missing"
    say "apt-get install python3-venv python3-dev build-essential"
    apt-get update -q >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv python3-dev build-essential >/dev/null 2>&1 \
        || die "cannot install python3-venv python3-dev build-essential"
}

do_install() {
    mkdir -p "$S"
    ensure_python3_venv
    apt_install &
    local apt_pid=$!
    pip_install
    wait $apt_pid || die "apt install failed"
}

# ---------------------------------------------------------------- the ML2/OVN variant
# OVN central, each compute's Open vSwitch and ovn-controller
. "$HERE/ovn.sh"
# the real neutron-openvswitch-agent on some computes (MINICLOUD_REAL_OVS_AGENT)
. "$HERE/ovs_agent.sh"

# ---------------------------------------------------------------- MariaDB / RabbitMQ
rabbit_env() {
    export HOME=$S/rabbitmq/home ERL_EPMD_PORT=$EPMD_PORT ERL_EPMD_ADDRESS=$IP \
        RABBITMQ_NODENAME=minicloud@localhost RABBITMQ_NODE_IP_ADDRESS=$IP RABBITMQ_NODE_PORT=$AMQP_PORT \
        RABBITMQ_CONFIG_FILE=$S/rabbitmq/rabbitmq.conf RABBITMQ_ENABLED_PLUGINS_FILE=$S/rabbitmq/enabled_plugins \
        RABBITMQ_MNESIA_BASE=$S/rabbitmq/mnesia RABBITMQ_LOG_BASE=$LOG/rabbitmq RABBITMQ_PID_FILE=$RUN/rabbitmq.beam.pid \
        RABBITMQ_DIST_PORT=$DIST_PORT \
        RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}" \
        RABBITMQ_CTL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
}

start_rabbit() {
    mkdir -p "$S/rabbitmq/home" "$S/rabbitmq/mnesia" "$LOG/rabbitmq"
    render "$T/rabbitmq.conf.in" >"$S/rabbitmq/rabbitmq.conf"
    echo '[].' >"$S/rabbitmq/enabled_plugins"
    (
        rabbit_env
        cd "$S/rabbitmq"
        start epmd epmd -port "$EPMD_PORT" -address "$IP"
        sleep 0.3
        start rabbitmq /usr/lib/rabbitmq/bin/rabbitmq-server
    )
}

wait_rabbit() {
    (
        rabbit_env
        cd "$S/rabbitmq"
        # bounded generously: on a loaded machine the broker and this Erlang client take minutes to boot
        timeout 250 /usr/lib/rabbitmq/bin/rabbitmqctl wait --timeout 240 "$RUN/rabbitmq.beam.pid" >"$LOG/rabbitmq-wait.out" 2>&1
    ) || fail_service rabbitmq "did not start"
    say "ready: rabbitmq on $IP:$AMQP_PORT"
}

start_mariadb() { mariadb_start "$DB_PORT"; }

wait_mariadb() { mariadb_create_databases "$DB_PORT" "127.0.0.1 localhost" "${DBS[@]}"; }

# ---------------------------------------------------------------- configuration
# Every file from a template in templates/ (or the library's, ../lib/templates): render replaces its ${NAME}s with
# the shell variables of that name (the upper-case locals below are the templates' own).
write_configs() {
    mkdir -p "$ETC"/{keystone,placement,nova,neutron,glance} "$S"/{keystone,nova/instances,neutron,glance/images,glance/staging,glance/tasks,lock}

    # ---- keystone
    { keystone_conf "$KEYSTONE_DEBUG"; render "$T/keystone-cache.conf.in"; } >"$ETC/keystone/keystone.conf"
    uwsgi_ini keystone $KEYSTONE_PORT keystone.wsgi.api:application 1 "OS_KEYSTONE_CONFIG_DIR=$ETC/keystone"

    # ---- placement
    { placement_conf "$DEBUG" keystone; keystone_authtoken placement; } >"$ETC/placement/placement.conf"
    uwsgi_ini placement $PLACEMENT_PORT placement.wsgi.api:application 2 "OS_PLACEMENT_CONFIG_DIR=$ETC/placement"

    # ---- glance (sqlite, file store)
    cp "$VENV/etc/glance/glance-api-paste.ini" "$ETC/glance/"
    { render "$T/glance-api.conf.in"; keystone_authtoken glance; } >"$ETC/glance/glance-api.conf"
    uwsgi_ini glance $GLANCE_PORT glance.wsgi.api:application 1 "OS_GLANCE_CONFIG_DIR=$ETC/glance"

    # ---- neutron
    # segments: routed networks (a provider with IPV4_ADDRESS per segment, hosts in its aggregate)
    local SERVICE_PLUGINS=qos,segments
    [ "$PLACEMENT_PLUGIN" = 1 ] && SERVICE_PLUGINS=qos,segments,placement
    [ "$L3" = 1 ] && SERVICE_PLUGINS=$SERVICE_PLUGINS,router
    # the L2 agent emulators heartbeat every 5 s and Neutron sees an agent dead 25 s after its last one (upstream:
    # 30 s / 75 s): a test that stops a host's agents waits 25 s, not 75 (OVN chassis keep upstream's 75 s)
    local AGENT_DOWN_TIME=25
    [ "$OVN" = 1 ] && AGENT_DOWN_TIME=75
    {
        render "$T/neutron.conf.in"
        keystone_authtoken neutron
        service_auth nova neutron
        service_auth placement neutron
    } >"$ETC/neutron/neutron.conf"
    # the OVN variant: its own mechanism driver and tenant network type, and its [ovn] section (ovn.sh)
    local ML2_TYPE_DRIVERS=flat,vlan ML2_TENANT_TYPES=vlan ML2_MECHANISMS=openvswitch,sriovnicswitch
    [ "$OVN" = 1 ] && { ML2_TYPE_DRIVERS=flat,vlan,geneve; ML2_TENANT_TYPES=geneve; ML2_MECHANISMS=ovn; }
    {
        render "$T/ml2_conf.ini.in"
        [ "$OVN" = 1 ] && ovn_ml2_sections
    } >"$ETC/neutron/ml2_conf.ini"
    cp "$VENV/etc/neutron/api-paste.ini" "$ETC/neutron/"
    render "$T/neutron-api.conf.in" >"$ETC/neutron/neutron-api.conf"
    uwsgi_ini neutron-api $NEUTRON_PORT neutron.wsgi.api:application 1 \
        "OS_NEUTRON_CONFIG_DIR=$ETC/neutron" "OS_NEUTRON_CONFIG_FILES=neutron.conf;ml2_conf.ini;neutron-api.conf"

    # ---- nova
    # The live-migration variants of the fake drivers: FakeDriver's own live_migration never
    # removes the guest from the source; these destroy it there (post_live_migration) as a real
    # driver does, after a 5 s "copy". Everything else (boot, cold migrate, resize, evacuate,
    # shelve) is FakeDriver's.
    # SR-IOV compute (optional): FakeDriverWithPciResources reports PFs 0000:0N:00.0 (N=1..3) with one VF
    # 0000:0N:00.1 each, the VF's parent_ifname being "<host>-ensN"; nova-pci.conf.in's glob address specs need
    # no sysfs look-ups.
    local COMPUTE_DRIVER=fake.FakeLiveMigrateDriver NOVA_PCI=""
    if [ "$SRIOV_COMPUTE" = 1 ]; then
        COMPUTE_DRIVER=fake.FakeLiveMigrateDriverWithPciResources
        NOVA_PCI=$(render "$T/nova-pci.conf.in")
    fi
    cp "$VENV/etc/nova/api-paste.ini" "$ETC/nova/"
    {
        render "$T/nova.conf.in"
        keystone_authtoken nova
        service_auth placement nova
        service_auth neutron nova
        echo "service_metadata_proxy = false"
    } >"$ETC/nova/nova.conf"
    render "$T/nova-api.conf.in" >"$ETC/nova/nova-api.conf"
    # every nova-compute but devstack0's (devstack1's always): nova.conf plus this override (its host, its own
    # state and instances dirs; same DB, cell, RabbitMQ). A spare devstack1 registers its service disabled.
    local h
    for h in "$HOST1" "${HOSTS[@]:2}"; do
        mkdir -p "$S/nova-$h/instances"
        {
            COMPUTE_HOST=$h render "$T/nova-compute-host.conf.in"
            [ "$h" = "$HOST1" ] && [ "$SPARE" = 1 ] && echo "enable_new_services = false"
        } >"$ETC/nova/nova-compute-$h.conf"
    done
    uwsgi_ini nova-api $NOVA_PORT nova.wsgi.osapi_compute:application 1 \
        "OS_NOVA_CONFIG_DIR=$ETC/nova" "OS_NOVA_CONFIG_FILES=api-paste.ini;nova.conf;nova-api.conf"

    # ---- clouds.yaml + env
    { echo "clouds:"; clouds_entry minicloud admin admin; clouds_entry minicloud-nova nova service; } >"$S/clouds.yaml"
    write_env
}

write_env() {
    local HOSTS_LIST="${HOSTS[*]}" OVS_DB_0 OVS_DB_1
    render "$T/env.in" >"$S/env"
    if [ "$OVN" = 1 ]; then
        OVS_DB_0=$(ovs_db_of "$HOSTNAME_NOVA"); OVS_DB_1=$(ovs_db_of "$HOST1")
        render "$T/env-ovn.in" >>"$S/env"
    fi
    if [ -n "$REAL_OVS" ]; then  # the real OVS agent's hosts: each one's Open vSwitch database and namespace
        local OVS_NETNS_0 OVS_NETNS_1
        OVS_DB_0=$(real_ovs_db_of "$HOSTNAME_NOVA"); OVS_DB_1=$(real_ovs_db_of "$HOST1")
        OVS_NETNS_0=$(real_ovs_netns "$HOSTNAME_NOVA"); OVS_NETNS_1=$(real_ovs_netns "$HOST1")
        render "$T/env-real-ovs.in" >>"$S/env"
    fi
}

write_agent_inis() {
    # Defaults reproduce seed 003 (devstack1: the same bandwidth on its own devices); `up` writes
    # them into the wiped state dir. The project's own ini files (e.g. rendered by its Ansible
    # module) are used instead when MINICLOUD_OVS_INI / MINICLOUD_SRIOV_INI (devstack1:
    # MINICLOUD_OVS_INI_1 / MINICLOUD_SRIOV_INI_1) point at them (for `up` and `restart-agents`).
    local h ovs sriov SRIOV_DEVICE
    for h in "${HOSTS[@]}"; do
        ovs=$(ovs_ini_of "$h"); sriov=$(sriov_ini_of "$h")
        mkdir -p "$(dirname "$ovs")" "$(dirname "$sriov")"
        [ -f "$ovs" ] || render "$T/openvswitch_agent.ini.in" >"$ovs"
        SRIOV_DEVICE=ens5
        # with the PCI fake driver the PF names nova knows are "<host>-ensN"
        [ "$SRIOV_COMPUTE" = 1 ] && SRIOV_DEVICE=$h-ens1
        [ -f "$sriov" ] || render "$T/sriov_agent.ini.in" >"$sriov"
    done
    for h in $(real_ovs_hosts); do
        write_real_ovs_agent_conf "$h"
        write_real_ovs_nova_conf "$h"
    done
}

# nova-compute, through nova_service.py's wrapper (`compute`) that
# (1) gives the fake driver a stable node identity, as nova's own FakeDriverWithoutFakeNodes does:
#     FakeDriver names its node with a per-process uuidsentinel and writes no compute_id, so a
#     second start of the same host is refused ("No local node identity found, but this is not
#     our first startup on this host"); a host coming back after an evacuation must restart.
#     The identity goes to [DEFAULT] state_path/compute_id (one state_path per compute);
# (2) with the PCI fake driver, answers the two sysfs look-ups that nova's own
#     FakeDriverWithPciResourcesConfigFixture mocks (only used for direct-physical / PF ports) and
#     reports real vendor/product ids (see README).
start_nova_compute() {  # start_nova_compute [HOST] (default devstack0)
    local h=${1:-$HOSTNAME_NOVA} name conf=(--config-file "$ETC/nova/nova.conf")
    name=nova-compute$(sfx "$h")
    [ "$h" = "$HOSTNAME_NOVA" ] || conf+=(--config-file "$ETC/nova/nova-compute-$h.conf")
    local os_vif=0
    # a host with the real OVS agent: the fake driver's os-vif variant (os_vif_driver.py), its own settings
    is_real_ovs "$h" && { os_vif=1; conf+=(--config-file "$ETC/nova/nova-compute-os-vif-$h.conf"); }
    MINICLOUD_SRIOV_COMPUTE=$SRIOV_COMPUTE MINICLOUD_OS_VIF=$os_vif MINICLOUD_SUPPORT=$HERE \
        start_forked nova-forks "$name" "$HERE/nova_service.py" run nova-compute "${conf[@]}" --log-file "$LOG/$name.log"
}

# The Nova services and the L2 agent emulators forked from a process that imported them once (a fresh Python
# importing Nova or Neutron and oslo costs each start seconds of CPU): nova_service.py's server (`nova-forks`,
# started by `up` once nova.conf is written: nova/cmd's monkey patching reads it) and agent_emulator.py's
# (`agent-forks`); each lives as long as the cloud, so stop-compute/start-compute, restart-agents and activate-spare
# fork from it too. MINICLOUD_FORKS=0: each service a Python of its own, as before.
forks_start() {
    [ "${MINICLOUD_FORKS:-1}" = 1 ] || return 0
    start nova-forks "$PY" "$HERE/nova_service.py" serve "$RUN/nova-forks.sock" --config-file "$ETC/nova/nova.conf"
    [ "$START_AGENTS" = 1 ] && start agent-forks "$PY" "$HERE/agent_emulator.py" serve "$RUN/agent-forks.sock"
    return 0
}

# start_forked SERVER NAME SCRIPT ARGS...: as `start NAME $PY SCRIPT ARGS...` (its log NAME.out, its pid file
# NAME.pid, a session of its own), forked by the fork server SERVER (nova-forks, agent-forks) when that runs
start_forked() {
    local server=$1 name=$2; shift 2
    if alive "$server"; then
        wait_for "the fork server $server" 120 "$server" grep -qx ready "$LOG/$server.out"
        if "$PY" -I -S "$HERE/../forks.py" start "$RUN/$server.sock" "$RUN/$name.pid" "$@" \
                </dev/null >"$LOG/$name.out" 2>&1; then
            return 0
        fi
        say "the fork server $server did not start $name ($LOG/$name.out): a process of its own"
    fi
    start "$name" "$PY" "$@"
}

# ---------------------------------------------------------------- db setup (parallel)
bg_step() {  # bg_step NAME cmd... : run in background, log to $LOG/setup-NAME.out
    local name=$1; shift
    ( "$@" ) >"$LOG/setup-$name.out" 2>&1 &
    echo "$! $name" >>"$RUN/setup.jobs"
}

wait_steps() {
    local pid name rc=0
    while read -r pid name; do
        if ! wait "$pid"; then
            say "setup step $name failed"; tail -n 30 "$LOG/setup-$name.out" >&2; rc=1
        fi
    done <"$RUN/setup.jobs"
    rm -f "$RUN/setup.jobs"
    [ $rc = 0 ] || exit 1
}

setup_nova() {
    local nm=("$VENV/bin/nova-manage" --config-file "$ETC/nova/nova.conf")
    "${nm[@]}" api_db sync
    "${nm[@]}" cell_v2 map_cell0 --database_connection "$DBURL/nova_cell0"
    "${nm[@]}" cell_v2 create_cell --name cell1 --verbose
    "${nm[@]}" db sync
}

register_catalog() {
    keystone_register nova,neutron,placement,glance "nova:compute:http://$IP:$NOVA_PORT/v2.1" \
        "placement:placement:http://$IP:$PLACEMENT_PORT" "neutron:network:http://$IP:$NEUTRON_PORT" \
        "glance:image:http://$IP:$GLANCE_PORT"
}

# ---------------------------------------------------------------- checks (python, openstacksdk)
check() {  # check WHAT [args] -> exit 0 when satisfied (tests/support/minicloud/check.py); CHECK_HOST, CHECK_HOSTS
    local host=${CHECK_HOST:-$HOSTNAME_NOVA} hosts="${CHECK_HOSTS:-${HOSTS[*]}}"
    if [ -n "${CHECK_SERVER:-}" ] && kill -0 "$CHECK_SERVER" 2>/dev/null; then
        check_served "$host" "$hosts" "$@"
        return
    fi
    OS_CLIENT_CONFIG_FILE=$S/clouds.yaml CHECK_HOST=$host CHECK_HOSTS=$hosts MINICLOUD_RUN=$RUN "$PY" "$HERE/check.py" "$@"
}

# The checks of one cloud.sh command answered by one process (check.py --serve: openstacksdk imported and a token
# got once, not once per wait): requests and answers through two FIFOs in $RUN/check; it ends with this script.
check_server_start() {
    [ -n "${CHECK_SERVER:-}" ] || [ "${MINICLOUD_CHECK_SERVER:-1}" = 0 ] && return 0
    local d=$RUN/check
    rm -rf "$d" && mkdir -p "$d" && mkfifo "$d/check.in" "$d/check.out" || return 0  # no server: a process per wait
    OS_CLIENT_CONFIG_FILE=$S/clouds.yaml MINICLOUD_RUN=$RUN setsid "$PY" "$HERE/check.py" --serve "$d" $$ \
        </dev/null >"$LOG/check-server.out" 2>&1 &
    CHECK_SERVER=$!
}

check_served() {  # check_served HOST HOSTS ARG...: the server's answer (its output, its exit status)
    local host=$1 hosts=$2 fd line rc=4 t=0; shift 2
    [ "${1:-}" = --wait ] && t=${2%.*}  # the answer comes at most the wait's own bound after the request
    exec {fd}<>"$RUN/check/check.out"  # read and write: opening never blocks, and a silent server times out below
    (IFS=$'\t'; printf '%s\n' "$host$IFS$hosts$IFS$*") >"$RUN/check/check.in"
    if IFS= read -r -t $((t + 30)) -u "$fd" line; then
        rc=${line%%$'\t'*}; line=${line#*$'\t'}
    else
        line="the checks' server (check.py --serve) did not answer: $LOG/check-server.out"
    fi
    exec {fd}<&-
    [ -n "$line" ] && echo "$line"
    return "$rc"
}

# wait_check DESC TIMEOUT SERVICES WHAT [args]: wait until `check WHAT args` is satisfied, polling every 0.5 s
# in one Python process (not one per poll); fail with the log of a SERVICE that exited, or on timeout with the
# check's last reason
wait_check() {
    local desc=$1 t=$2 svc=$3 out rc; shift 3
    out=$(check --wait "$t" --pids "${svc// /,}" "$@") && rc=0 || rc=$?
    case $rc in
        0) say "ready: $desc" ;;
        3) fail_service "$out" "exited while waiting for: $desc" ;;
        *) fail_service "${svc%% *}" "timeout (${t}s) waiting for: $desc (last: $out)" ;;
    esac
}

# ---------------------------------------------------------------- services
start_api() {  # start_api NAME
    start "$1" "$VENV/bin/uwsgi" --ini "$ETC/uwsgi-$1.ini"
}

# start_agents [HOST]: HOST's two emulators (default devstack0), named agent-ovs/agent-sriov for
# devstack0 (the single-compute names) and agent-ovs-HOST/agent-sriov-HOST for the others.
start_agents() {
    [ "$START_AGENTS" = 1 ] || return 0
    local h=${1:-$HOSTNAME_NOVA} x ovs sriov
    x=$(sfx "$h"); ovs=$(ovs_ini_of "$h"); sriov=$(sriov_ini_of "$h")
    save_agents_env
    rm -f "$RUN/agent-ovs$x.json" "$RUN/agent-sriov$x.json"
    [ -f "$ovs" ] || die "OVS agent ini $ovs missing"
    [ -f "$sriov" ] || die "SR-IOV agent ini $sriov missing"
    if is_real_ovs "$h"; then
        start_real_ovs_agent "$h"
    else
        start_forked agent-forks "agent-ovs$x" "$HERE/agent_emulator.py" --kind openvswitch --host "$h" \
            --config-file "$ETC/neutron/neutron.conf" --config-file "$ovs" --log-file "$LOG/agent-ovs$x.log" \
            --status-file "$RUN/agent-ovs$x.json"
    fi
    start_forked agent-forks "agent-sriov$x" "$HERE/agent_emulator.py" --kind sriov --host "$h" \
        --config-file "$ETC/neutron/neutron.conf" --config-file "$sriov" --log-file "$LOG/agent-sriov$x.log" \
        --status-file "$RUN/agent-sriov$x.json"
}

save_agents_env() {  # the ini paths in use, for restart-agents / activate-spare
    printf 'OVS_INI=%q\nSRIOV_INI=%q\nOVS_INI_1=%q\nSRIOV_INI_1=%q\nOVS_INI_2=%q\nSRIOV_INI_2=%q\n' "$OVS_INI" \
        "$SRIOV_INI" "$OVS_INI_1" "$SRIOV_INI_1" "$OVS_INI_2" "$SRIOV_INI_2" >"$RUN/agents.env"
}

# load_agents_env: the ini paths `up` used (agents.env), each overridden by its MINICLOUD_* variable if set
load_agents_env() {
    local v n
    # shellcheck source=/dev/null
    [ -f "$RUN/agents.env" ] && . "$RUN/agents.env"
    for v in OVS_INI SRIOV_INI OVS_INI_1 SRIOV_INI_1 OVS_INI_2 SRIOV_INI_2; do
        n=MINICLOUD_$v
        [ -n "${!n:-}" ] && printf -v "$v" '%s' "$(realpath -m "${!n}")"
    done
    return 0
}

# wait_agents HOST [TIMEOUT]
wait_agents() {
    [ "$START_AGENTS" = 1 ] || return 0
    local h=${1:-$HOSTNAME_NOVA} x synced=0
    x=$(sfx "$h")
    [ "$PLACEMENT_PLUGIN" = 1 ] && synced=1
    if is_real_ovs "$h"; then  # the real agent writes no status file: its report is read from Neutron below
        wait_for "$h: SR-IOV emulator's first heartbeat" 60 "agent-ovs$x agent-sriov$x" test -s "$RUN/agent-sriov$x.json"
    else
        wait_for "$h: emulators' first heartbeat" 60 "agent-ovs$x agent-sriov$x" \
            test -s "$RUN/agent-ovs$x.json" -a -s "$RUN/agent-sriov$x.json"
    fi
    if ! ( CHECK_HOST=$h wait_check "$h: L2 agents alive (resources_synced=$synced)" "${2:-120}" \
            "agent-ovs$x agent-sriov$x neutron-rpc" agents "Open vSwitch agent,NIC Switch agent" $synced ); then
        say "neutron's last placement sync errors (neutron-rpc.log):"
        grep -h "placement client call failed\|Synchronization of resources" "$LOG"/neutron-rpc.log 2>/dev/null \
            | tail -n 6 | cut -c1-600 >&2
        exit 1
    fi
    if is_real_ovs "$h"; then  # through its first loop (ports handled); its report as the emulator's status file has it
        wait_for "$h: the OVS agent's first loop" 60 "agent-ovs$x" real_ovs_agent_looped "$h"
        CHECK_HOST=$h check agent-report "Open vSwitch agent" "$RUN/agent-ovs$x.json" >/dev/null \
            || fail_service "agent-ovs$x" "cannot read $h's Open vSwitch agent report from Neutron"
    fi
    if [ "$synced" = 1 ]; then
        wait_check "$h: placement inventories match the agents' reports" 60 "agent-ovs$x agent-sriov$x neutron-rpc" \
            agent-inventories "$RUN/agent-ovs$x.json" "$RUN/agent-sriov$x.json"
    fi
}

SERVICES=(agent-ovs agent-sriov nova-compute "agent-ovs-$HOST1" "agent-sriov-$HOST1" "nova-compute-$HOST1"
          agent-ovs-devstack2 agent-sriov-devstack2 nova-compute-devstack2
          nova-scheduler nova-conductor nova-forks agent-forks nova-api neutron-periodic neutron-rpc neutron-api glance
          placement keystone
          "ovn-controller-$HOSTNAME_NOVA" "ovs-vswitchd-$HOSTNAME_NOVA" "ovs-db-$HOSTNAME_NOVA"
          "ovn-controller-$HOST1" "ovs-vswitchd-$HOST1" "ovs-db-$HOST1" ovn-northd ovn-sb ovn-nb
          "ovs-of-$HOSTNAME_NOVA" "ovs-of-$HOST1")

# The running cloud's mode (written by `up`): later commands act on what runs, not on their env.
save_mode() {
    printf 'COMPUTES=%q\nSPARE=%q\nSPARE_ACTIVE=%q\nSRIOV_COMPUTE=%q\nPLACEMENT_PLUGIN=%q\nSTART_AGENTS=%q\nOVN=%q\nREAL_OVS=%q\n' \
        "$COMPUTES" "$SPARE" "${SPARE_ACTIVE:-0}" "$SRIOV_COMPUTE" "$PLACEMENT_PLUGIN" "$START_AGENTS" "$OVN" "$REAL_OVS" \
        >"$RUN/mode.env"
}

load_mode() {
    [ -f "$RUN/mode.env" ] || return 0
    # shellcheck source=/dev/null
    . "$RUN/mode.env"
    set_hosts
    return 0
}

do_down() {
    # State is wiped by the next `up`, so no graceful ordering is needed: TERM every process
    # group at once, SIGKILL what is still there after the grace period.
    local grace=${MINICLOUD_STOP_GRACE:-5} s
    for s in "${SERVICES[@]}" rabbitmq mariadb; do stop "$s" "$grace" & done
    wait
    stop epmd 3
    real_ovs_stop_netns
    # any leftover pid file of ours
    if [ -d "$RUN" ]; then
        for f in "$RUN"/*.pid; do
            [ -e "$f" ] || continue
            case $(basename "$f") in rabbitmq.beam.pid|mariadbd.pid) rm -f "$f"; continue;; esac
            stop "$(basename "$f" .pid)" 3
        done
    fi
}

start_neutron() {
    start_api neutron-api
    start neutron-rpc "$VENV/bin/neutron-rpc-server" --config-file "$ETC/neutron/neutron.conf" \
        --config-file "$ETC/neutron/ml2_conf.ini" --log-file "$LOG/neutron-rpc.log"
    start neutron-periodic "$VENV/bin/neutron-periodic-workers" --config-file "$ETC/neutron/neutron.conf" \
        --config-file "$ETC/neutron/ml2_conf.ini" --log-file "$LOG/neutron-periodic.log"
}

# ---------------------------------------------------------------- database snapshot
# The databases as migrated, bootstrapped and with the catalog registered (no service has run yet), Keystone's
# fernet and credential keys and Glance's sqlite file: taken by the first `up`, restored by later ones instead
# of running the migrations again (they are most of a cold start's CPU). Keyed on what makes those databases and
# files (the functions that create, migrate, bootstrap and configure them, with the credentials and URLs they
# use; the shell library and every template), the venv's installed distributions and MariaDB's version: a change
# there takes a new snapshot.
SNAP_ROOT=${MINICLOUD_SNAPSHOT_DIR:-$ROOT/.state/minicloud-snapshot}
DBS=(keystone placement nova_api nova_cell0 nova neutron)

snapshot_key() {
    { declare -f start_mariadb wait_mariadb write_configs migrate setup_nova register_catalog save_snapshot
      echo "$DBURL $TRANSPORT $KS $PASS ${DBS[*]}"
      (cd "$HERE/.." && find lib minicloud/templates -type f ! -path '*/__pycache__/*' | LC_ALL=C sort | xargs sha256sum)
      # shellcheck disable=SC2010
      ls "$VENV"/lib/python3*/site-packages | grep 'dist-info$'; mariadbd --version; } 2>/dev/null | sha256sum | cut -c1-16
}

snapshot_dir() { echo "$SNAP_ROOT/$(snapshot_key)"; }

snapshot_ok() { [ "${MINICLOUD_SNAPSHOT:-1}" = 1 ] && [ -f "$(snapshot_dir)/complete" ]; }

save_snapshot() {
    [ "${MINICLOUD_SNAPSHOT:-1}" = 1 ] || return 0
    local dir tmp
    dir=$(snapshot_dir)
    [ -f "$dir/complete" ] && return 0
    mkdir -p "$SNAP_ROOT"
    tmp=$(mktemp -d "$SNAP_ROOT/.new.XXXXXX")
    mariadb-dump --socket="$RUN/mysql.sock" -uroot --single-transaction --skip-dump-date --databases "${DBS[@]}" \
        >"$tmp/databases.sql" || { rm -rf "$tmp"; die "mariadb-dump for the snapshot failed"; }
    cp -a "$S/keystone/fernet-keys" "$S/keystone/credential-keys" "$tmp/"
    cp -a "$S/glance/glance.sqlite" "$tmp/"
    touch "$tmp/complete"
    # one snapshot: this key's (another cloud of the same run, in its own state dir, may be saving it too: its
    # .new.* is left alone, and the first complete one stays)
    find "$SNAP_ROOT" -mindepth 1 -maxdepth 1 ! -name '.new.*' ! -name "$(basename "$dir")" -exec rm -rf {} +
    find "$SNAP_ROOT" -mindepth 1 -maxdepth 1 -name '.new.*' -mmin +60 -exec rm -rf {} +  # a killed run's
    mv -T "$tmp" "$dir" 2>/dev/null || { rm -rf "$tmp"; [ -f "$dir/complete" ] || die "could not save the snapshot in $dir"; }
    say "snapshot of the migrated databases saved ($(du -sh "$dir" | cut -f1), $dir)"
}

restore_snapshot() {  # the databases (dropped first if they exist), the keys, glance's file
    local dir sql="" db
    dir=$(snapshot_dir)
    for db in "${DBS[@]}"; do sql+="DROP DATABASE IF EXISTS $db; "; done
    { echo "$sql"; cat "$dir/databases.sql"; } | mariadb --socket="$RUN/mysql.sock" -uroot \
        || fail_service mariadb "restoring the snapshot $dir failed"
    mkdir -p "$S/keystone" "$S/glance"
    cp -a "$dir/fernet-keys" "$dir/credential-keys" "$S/keystone/"
    cp -a "$dir/glance.sqlite" "$S/glance/"
}

# migrate [CMD]: the databases migrated (CMD, e.g. wait_rabbit, runs meanwhile), Keystone bootstrapped and
# started, the catalog registered, and the snapshot of it all saved
migrate() {
    say "db migrations (parallel)"
    bg_step keystone keystone_setup
    bg_step placement "$VENV/bin/placement-manage" --config-file "$ETC/placement/placement.conf" db sync
    bg_step nova setup_nova
    bg_step neutron "$VENV/bin/neutron-db-manage" --config-file "$ETC/neutron/neutron.conf" \
        --config-file "$ETC/neutron/ml2_conf.ini" upgrade heads
    bg_step glance "$VENV/bin/glance-manage" --config-dir "$ETC/glance" db_sync
    "$@"
    wait_steps
    say "migrations done"

    start_api keystone
    wait_check "keystone token" 60 keystone token
    register_catalog >"$LOG/setup-catalog.out" 2>&1 || { cat "$LOG/setup-catalog.out" >&2; die "catalog registration failed"; }
    say "catalog registered"
    save_snapshot
}

# `cloud.sh snapshot` (make cloud-install): the snapshot `up` restores, taken now when none is current, so that
# the clouds of a test run restore it instead of each migrating (a set-up step, like installing the packages).
# Only MariaDB and Keystone run, in a state dir of their own (.state/minicloud-snapshot-build) and, where one can
# be made, a network namespace of their own (tests/support/netns.py): a cloud running meanwhile is not touched.
do_snapshot() {
    if snapshot_ok; then say "the database snapshot is current: $(snapshot_dir)"; return 0; fi
    [ "${MINICLOUD_SNAPSHOT:-1}" = 1 ] || return 0
    do_install
    if [ -z "${MINICLOUD_SNAPSHOT_BUILD:-}" ]; then
        local build=$ROOT/.state/minicloud-snapshot-build netns=()
        unshare --net true 2>/dev/null && netns=(unshare --net -- "$PY" "$ROOT/tests/support/netns.py")
        MINICLOUD_SNAPSHOT_BUILD=1 MINICLOUD_STATE=$build MINICLOUD_SKIP_INSTALL=1 "${netns[@]}" bash "$0" snapshot
        rm -rf "$build"
        return
    fi
    do_down
    rm -rf "$S"
    mkdir -p "$ETC" "$LOG" "$RUN"
    : >"$RUN/setup.jobs"
    trap do_down EXIT  # MariaDB and Keystone stop also when a step fails
    start_mariadb
    write_configs
    wait_mariadb
    migrate
}

# ---------------------------------------------------------------- up
# A cold `up` starts MariaDB and RabbitMQ on wiped state and migrates (or restores the snapshot). When they
# already run for a previous cloud (a variant: `up` again with other MINICLOUD_* settings) and a snapshot
# exists, `up` is warm: it stops only the OpenStack services and agents, resets RabbitMQ (no queue or message
# left), restores the databases from the snapshot, wipes the rest of the state, and starts the services with
# the new configuration: the same state as a cold start, without its MariaDB/RabbitMQ start and migrations.
# MINICLOUD_WARM=0: always cold.
infra_alive() { alive mariadb && alive rabbitmq; }

reset_rabbit() {
    (
        rabbit_env
        cd "$S/rabbitmq"
        for a in stop_app reset start_app; do
            timeout 60 /usr/lib/rabbitmq/bin/rabbitmqctl "$a" || exit 1
        done
    ) >"$LOG/rabbitmq-reset.out" 2>&1
}

stop_openstack() {  # every service and agent, not MariaDB/RabbitMQ/epmd; their state is reset next
    local s
    for s in "${SERVICES[@]}"; do stop "$s" 1 & done
    wait
    real_ovs_stop_netns
}

wipe_openstack_state() {
    find "$S" -mindepth 1 -maxdepth 1 ! -name 'install-*.log' ! -name mysql ! -name rabbitmq ! -name run \
        ! -name log -exec rm -rf {} +
    find "$LOG" -mindepth 1 -maxdepth 1 ! -name 'mariadb*' ! -name 'rabbitmq*' ! -name 'epmd*' -exec rm -rf {} +
    find "$RUN" -mindepth 1 -maxdepth 1 ! -name 'mariadb*' ! -name 'mysql.sock*' ! -name 'rabbitmq*' \
        ! -name 'epmd*' -exec rm -rf {} +
}

do_up() {
    mkdir -p "$S"
    local warm=0 h
    check_real_ovs_hosts
    if [ -d "$RUN" ] && ls "$RUN"/*.pid >/dev/null 2>&1; then
        if [ "${MINICLOUD_WARM:-1}" = 1 ] && infra_alive && snapshot_ok; then
            warm=1
            say "warm start: stopping the previous cloud's OpenStack services (MariaDB and RabbitMQ stay)"
            stop_openstack
        else
            say "stopping a previous minicloud first"
            do_down
        fi
    fi
    do_install
    if [ $warm = 1 ]; then
        wipe_openstack_state
        mkdir -p "$ETC" "$LOG" "$RUN"
        reset_rabbit &
        local rabbit_pid=$!
        write_configs
        forks_start
        write_agent_inis
        check_server_start
        [ "$OVN" = 1 ] && ovn_start
        for h in $(real_ovs_hosts); do real_ovs_start "$h"; done
        restore_snapshot
        wait $rabbit_pid || fail_service rabbitmq-reset "rabbitmqctl stop_app/reset/start_app failed"
        say "databases restored from the snapshot, RabbitMQ reset"
        start_api keystone
        wait_check "keystone token" 60 keystone token
    else
        say "wiping $S"
        find "$S" -mindepth 1 -maxdepth 1 ! -name 'install-*.log' -exec rm -rf {} +
        mkdir -p "$ETC" "$LOG" "$RUN"
        : >"$RUN/setup.jobs"

        start_mariadb
        start_rabbit
        write_configs
        forks_start
        write_agent_inis
        check_server_start
        [ "$OVN" = 1 ] && ovn_start
        for h in $(real_ovs_hosts); do real_ovs_start "$h"; done
        wait_mariadb

        if snapshot_ok; then
            restore_snapshot
            say "databases restored from the snapshot $(snapshot_dir)"
            wait_rabbit
            start_api keystone
            wait_check "keystone token" 60 keystone token
        else
            migrate wait_rabbit
        fi
    fi

    start_api placement
    start_api glance
    start_neutron
    start_api nova-api
    start_forked nova-forks nova-conductor "$HERE/nova_service.py" run nova-conductor --config-file "$ETC/nova/nova.conf" \
        --log-file "$LOG/nova-conductor.log"
    start_forked nova-forks nova-scheduler "$HERE/nova_service.py" run nova-scheduler --config-file "$ETC/nova/nova.conf" \
        --log-file "$LOG/nova-scheduler.log"
    local h computes=""
    for h in "${HOSTS[@]}"; do
        start_nova_compute "$h"
        computes+=" nova-compute$(sfx "$h")"
    done
    SPARE_ACTIVE=0
    save_mode
    for h in $(agent_hosts); do start_agents "$h"; done

    wait_for "placement API" 60 placement http_ok "http://$IP:$PLACEMENT_PORT/"
    wait_check "neutron API" 90 "neutron-api neutron-rpc neutron-periodic" network-api
    wait_check "glance API" 60 glance image-api
    wait_check "compute services up (${HOSTS[*]})" 120 "nova-api nova-conductor$computes" compute-up
    wait_check "compute node providers in placement (${HOSTS[*]})" 90 "${computes# }" compute-rp
    # one discovery maps every compute node of the cell
    "$VENV/bin/nova-manage" --config-file "$ETC/nova/nova.conf" cell_v2 discover_hosts --verbose \
        >"$LOG/setup-discover.out" 2>&1 || { cat "$LOG/setup-discover.out" >&2; die "discover_hosts failed"; }
    wait_check "hypervisors mapped (${HOSTS[*]})" 60 "nova-api$computes" hypervisor
    [ "$OVN" = 1 ] && ovn_after_roots
    wait_check "nova services up" 60 "nova-scheduler nova-conductor" services-up
    for h in $(agent_hosts); do wait_agents "$h"; done
    [ "$OVN" = 1 ] && wait_ovn
    if [ "$START_AGENTS" = 1 ] && [ "$PLACEMENT_PLUGIN" = 1 ]; then
        wait_check "bandwidth provider in placement" 60 neutron-rpc bw-provider
    fi
    [ "$SPARE" = 1 ] && say "$HOST1 is a spare (nova-compute disabled, no agents): cloud.sh activate-spare"
    say "minicloud is up: OS_CLIENT_CONFIG_FILE=$S/clouds.yaml OS_CLOUD=minicloud (env: $S/env)"
}

# the hosts whose agent emulators run: every compute, but a spare devstack1 only once activated
agent_hosts() {
    [ "$START_AGENTS" = 1 ] || return 0
    local h
    for h in "${HOSTS[@]}"; do
        [ "$h" = "$HOST1" ] && [ "$SPARE" = 1 ] && [ "${SPARE_ACTIVE:-0}" != 1 ] && continue
        echo "$h"
    done
}

do_activate_spare() {
    { [ -d "$RUN" ] && alive neutron-rpc; } || die "minicloud is not running"
    load_mode
    [ "$COMPUTES" != 1 ] && [ "$SPARE" = 1 ] || die "no spare compute in this cloud (started without MINICLOUD_SPARE_COMPUTE=1)"
    if [ "$SPARE_ACTIVE" = 1 ]; then say "$HOST1 is already in service"; return 0; fi
    load_agents_env
    check_server_start
    say "bringing the spare $HOST1 into service: its agents ($OVS_INI_1, $SRIOV_INI_1), then nova-compute enabled"
    SPARE_ACTIVE=1
    if [ "$START_AGENTS" = 1 ]; then
        start_agents "$HOST1"
        wait_agents "$HOST1" 90
    fi
    CHECK_HOST=$HOST1 check enable-compute || die "cannot enable nova-compute on $HOST1"
    CHECK_HOST=$HOST1 wait_check "$HOST1: nova-compute enabled, COMPUTE_STATUS_DISABLED gone" 60 \
        "nova-compute-$HOST1" compute-enabled
    save_mode
}

do_stop_compute() {  # a host failure: its nova-compute stops (its service goes down after the report timeout)
    local h=${1:?usage: cloud.sh stop-compute HOST}
    load_mode
    [[ " ${HOSTS[*]} " == *" $h "* ]] || die "no compute $h in this cloud (${HOSTS[*]})"
    stop "nova-compute$(sfx "$h")" "${MINICLOUD_STOP_GRACE:-5}"
    say "nova-compute on $h stopped"
}

do_start_compute() {  # the host is back: nova-compute starts (init_host cleans up evacuated instances)
    local h=${1:?usage: cloud.sh start-compute HOST} since
    load_mode
    [[ " ${HOSTS[*]} " == *" $h "* ]] || die "no compute $h in this cloud (${HOSTS[*]})"
    alive "nova-compute$(sfx "$h")" && die "nova-compute on $h is already running"
    since=$(date +%s)
    start_nova_compute "$h"
    CHECK_HOST=$h wait_check "$h: nova-compute started and reporting" 120 "nova-compute$(sfx "$h")" \
        compute-reported "$since"
}

do_restart_neutron_api() {
    { [ -d "$RUN" ] && alive neutron-rpc; } || die "minicloud is not running"
    stop neutron-api "${MINICLOUD_STOP_GRACE:-5}"
    start_api neutron-api
    wait_check "neutron API (restarted)" 90 "neutron-api" network-api
}

do_stop_placement() {  # a Placement outage: its API process stops (Nova and Neutron get connection refused)
    { [ -d "$RUN" ] && alive neutron-rpc; } || die "minicloud is not running"
    stop placement "${MINICLOUD_STOP_GRACE:-5}"
    say "placement stopped"
}

do_start_placement() {  # the outage ends: the same Placement (its database untouched) answers again
    { [ -d "$RUN" ] && alive neutron-rpc; } || die "minicloud is not running"
    alive placement && die "placement is already running"
    start_api placement
    wait_for "placement API (started again)" 60 placement http_ok "http://$IP:$PLACEMENT_PORT/"
}

do_start_api() {  # start-api NAME: an API process (placement, nova-api, neutron-api) started again after it died
    # (the soak's heal of a kill -9: tests/support/soak/cloud.py); what is left of its process group is killed first
    { [ -d "$RUN" ] && alive neutron-rpc; } || die "minicloud is not running"
    local name=${1:-} port
    case $name in
        placement) port=$PLACEMENT_PORT ;;
        nova-api) port=$NOVA_PORT ;;
        neutron-api) port=$NEUTRON_PORT ;;
        *) die "start-api: placement, nova-api or neutron-api, not '$name'" ;;
    esac
    if [ -f "$RUN/$name.pid" ]; then
        local pid i; pid=$(cat "$RUN/$name.pid")
        # a killed master is a zombie until its parent (init, here) reaps it: not running
        [ "$(ps -o stat= -p "$pid" 2>/dev/null | cut -c1)" = Z ] || ! kill -0 "$pid" 2>/dev/null \
            || die "$name is already running"
        kill -KILL -- "-$pid" 2>/dev/null || true
        for ((i = 0; i < 50; i++)); do { kill -0 -- "-$pid" || kill -0 "$pid"; } 2>/dev/null || break; sleep 0.2; done
    fi
    start_api "$name"
    wait_for "$name (started again)" 90 "$name" http_ok "http://$IP:$port/"
}

# running_compute HOST: the cloud runs (its mode loaded) and HOST is one of its computes
running_compute() {
    { [ -d "$RUN" ] && alive neutron-rpc; } || die "minicloud is not running"
    load_mode
    [[ " ${HOSTS[*]} " == *" $1 "* ]] || die "no compute $1 in this cloud (${HOSTS[*]})"
}

stop_agents() {  # stop_agents HOST: its two emulators (or the real OVS agent and the SR-IOV emulator), side by side
    local x grace=10
    x=$(sfx "$1")
    # the real agent has left its loop a second or two after SIGTERM and writes nothing after; draining its RPC
    # connections then takes more than 10 s
    is_real_ovs "$1" && grace=3
    stop "agent-ovs$x" "$grace" &
    stop "agent-sriov$x" 10 &
    wait
}

do_restart_agents() {  # do_restart_agents [HOST]
    local h=${1:-$HOSTNAME_NOVA}
    running_compute "$h"
    [ "$h" = "$HOST1" ] && [ "$SPARE" = 1 ] && [ "$SPARE_ACTIVE" != 1 ] && die "$h is a spare: cloud.sh activate-spare"
    # ini paths: env overrides, else the ones `up` used
    [ -f "$RUN/agents.env" ] && load_agents_env
    PLACEMENT_PLUGIN=$(grep -q '^service_plugins = .*placement' "$ETC/neutron/neutron.conf" && echo 1 || echo 0)
    say "restarting $h's agent emulators with $(ovs_ini_of "$h") and $(sriov_ini_of "$h")"
    stop_agents "$h"
    START_AGENTS=1
    start_agents "$h"
    wait_agents "$h" 60
}

do_stop_agents() {  # do_stop_agents [HOST]: HOST's two L2 agent emulators stop (Neutron sees them dead
    # after agent_down_time); restart-agents HOST brings them back
    local h=${1:-$HOSTNAME_NOVA}
    running_compute "$h"
    say "stopping $h's agent emulators"
    stop_agents "$h"
}

do_status() {
    local s rc=0
    load_mode
    for s in mariadb epmd rabbitmq "${SERVICES[@]}"; do
        case $s in
            ovn-*) [ "$OVN" = 1 ] || continue
                   [[ $s == *-$HOST1 ]] && [ "$COMPUTES" = 1 ] && continue ;;
            ovs-of-*) is_real_ovs "${s#ovs-of-}" || continue ;;
            ovs-*) { [ "$OVN" = 1 ] || is_real_ovs "${s##*-}"; } || continue
                   [[ $s == *-$HOST1 ]] && [ "$COMPUTES" = 1 ] && continue ;;
            agent-*) [ "$START_AGENTS" = 1 ] || continue ;;
        esac
        case $s in
            *-devstack[1-9]) [[ " ${HOSTS[*]} " == *" ${s##*-} "* ]] || continue
                      if [[ $s == agent-*-$HOST1 ]] && [ "$SPARE" = 1 ] && [ "${SPARE_ACTIVE:-0}" != 1 ]; then
                          printf '%-26s spare (not started: cloud.sh activate-spare)\n' "$s"; continue
                      fi ;;
        esac
        if alive "$s"; then
            local pid; pid=$(cat "$RUN/$s.pid")
            local rss; rss=$(ps -o rss= -g "$pid" 2>/dev/null | awk '{s+=$1} END {printf "%d", s/1024}')
            printf '%-26s running  pid %-7s rss %5s MB\n' "$s" "$pid" "$rss"
        else
            printf '%-26s stopped\n' "$s"; rc=1
        fi
    done
    return $rc
}

do_logs() {
    local n=${1:-30} f
    [ -d "$LOG" ] || die "no logs at $LOG"
    for f in "$LOG"/*.log "$LOG"/*.out "$LOG"/rabbitmq/*.log; do
        [ -s "$f" ] || continue
        echo "===== $f"
        tail -n "$n" "$f"
    done
}

cmd=${1:-}
shift || true
case $cmd in
    up) do_up ;;
    down) do_down; say "minicloud stopped" ;;
    status) do_status ;;
    logs) do_logs "$@" ;;
    restart-agents) do_restart_agents "$@" ;;
    stop-agents) do_stop_agents "$@" ;;
    activate-spare) do_activate_spare ;;
    stop-compute) do_stop_compute "$@" ;;
    start-compute) do_start_compute "$@" ;;
    restart-neutron-api) do_restart_neutron_api ;;
    stop-placement) do_stop_placement ;;
    start-placement) do_start_placement ;;
    start-api) do_start_api "$@" ;;
    neutron-placement) do_neutron_placement "$@" ;;
    install) do_install ;;
    install-packages) mkdir -p "$S"; apt_install ;;
    snapshot) do_snapshot ;;
    snapshot-dir) snapshot_dir ;;
    *) sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
