#!/usr/bin/env bash
# install-zookeeper.sh: install Debian's ZooKeeper (3.8) for the integration
# tests (internal/zktest) if it is missing. Idempotent; when ZooKeeper is
# already installed it exits at once without output.
#
# Usage: scripts/install-zookeeper.sh [--check]
#   --check  also start a standalone server once and ask it `ruok`.
set -euo pipefail

jar=/usr/share/java/zookeeper.jar
check=false
case "${1:-}" in
"") ;;
--check) check=true ;;
*)
	echo "usage: $0 [--check]" >&2
	exit 2
	;;
esac

# smoke_test starts a standalone server on a free port and waits for
# `ruok` -> `imok`, using bash's /dev/tcp (no nc needed).
smoke_test() {
	local dir port pid reply i
	dir=$(mktemp -d)
	trap 'kill "${pid:-}" 2>/dev/null || true; wait "${pid:-}" 2>/dev/null || true; rm -rf "$dir"; trap - RETURN' RETURN
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
		echo $((20000 + RANDOM % 20000)))
	cat >"$dir/zoo.cfg" <<CFG
tickTime=500
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=*
CFG
	java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dzookeeper.admin.enableServer=false \
		-cp /etc/zookeeper/conf:$jar org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" \
		>"$dir/log" 2>&1 &
	pid=$!
	for i in $(seq 1 100); do # up to ~20 s
		reply=$( (exec 3<>"/dev/tcp/127.0.0.1/$port" && printf ruok >&3 && timeout 2 cat <&3) 2>/dev/null || true)
		if [[ $reply == imok ]]; then
			echo "install-zookeeper: ZooKeeper server answered imok"
			return 0
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			break
		fi
		sleep 0.2
	done
	echo "install-zookeeper: a test server did not answer ruok; its log:" >&2
	tail -n 30 "$dir/log" >&2 || true
	return 1
}

if [[ ! -e $jar ]]; then
	sudo=()
	if [[ $(id -u) -ne 0 ]] && command -v sudo >/dev/null; then
		sudo=(sudo)
	fi
	echo "install-zookeeper: installing Debian's zookeeper package" >&2
	"${sudo[@]}" apt-get update
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends zookeeper
	if [[ ! -e $jar ]]; then
		echo "install-zookeeper: $jar still missing after installing zookeeper" >&2
		exit 1
	fi
	command -v java >/dev/null || {
		echo "install-zookeeper: java missing after installing zookeeper" >&2
		exit 1
	}
	check=true
fi

if $check; then
	smoke_test
fi
