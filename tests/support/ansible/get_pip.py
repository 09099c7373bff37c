"""Stand-in for pypa's get-pip.py, which ansible-test downloads to bootstrap pip into its sanity
virtual environments from a host this machine cannot reach. sanity.sh puts it into ansible-test's
cache. Same contract: install the pip requested on the command line into this (pip-less) Python;
the bundled pip of ensurepip fetches it from PyPI."""
import ensurepip
import os
import subprocess
import sys

env = dict(os.environ)  # ensurepip turns off pip's configuration (index, certificates) in os.environ
ensurepip.bootstrap()
# get-pip.py's own flags; pip itself does not know them.
args = [arg for arg in sys.argv[1:] if arg not in ('--no-setuptools', '--no-wheel')]
subprocess.check_call([sys.executable, '-m', 'pip', 'install', '--upgrade', '--force-reinstall'] + args, env=env)
