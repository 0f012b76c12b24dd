# shellcheck shell=bash
# Starts a throwaway PostgreSQL server for the tests of checkpoint/pgcheckpoint.
#
# Meant to be SOURCED (by .ci/run, or by hand: `source .ci/postgres.sh`):
# it installs PostgreSQL from the distribution's packages when initdb and
# pg_ctl are missing (as root; otherwise it fails saying so), runs initdb in
# a temporary directory (as the postgres user when running as root, since
# initdb refuses root), starts the server on the first free loopback port
# from 54329 upward with its socket in that directory, creates the database
# "refine", and exports
#
#   REFINE_PG_URL=postgres://postgres@127.0.0.1:PORT/refine?sslmode=disable
#   REFINE_PG_REQUIRED=1
#   REFINE_PG_RESTART=<dir>/restart.sh   (restarts the server as a crash would)
#
# A trap on EXIT stops the server and removes the directory (an EXIT trap
# already set by the caller is kept and run after it).

refine_pg_fail() {
  echo "postgres.sh: $*" >&2
  return 1
}

refine_pg_bindir() {
  local d
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(command -v pg_ctl)"
    return 0
  fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
      echo "$d"
      return 0
    fi
  done
  return 1
}

refine_pg_start() {
  local bindir
  if ! bindir=$(refine_pg_bindir); then
    if [ "$(id -u)" -ne 0 ]; then
      refine_pg_fail "initdb and pg_ctl not found (PATH, /usr/lib/postgresql/*/bin) and not running as root to install them: install PostgreSQL (e.g. apt-get install -y postgresql) or run as root" || return 1
    fi
    echo "postgres.sh: installing PostgreSQL (apt-get install -y --no-install-recommends postgresql)"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null ||
      { refine_pg_fail "apt-get install -y --no-install-recommends postgresql failed"; return 1; }
    bindir=$(refine_pg_bindir) || { refine_pg_fail "initdb and pg_ctl still not found after installing postgresql"; return 1; }
  fi

  # As root, the server runs as the postgres user (initdb refuses root).
  local -a as=()
  if [ "$(id -u)" -eq 0 ]; then
    if ! id postgres >/dev/null 2>&1; then
      useradd --system --home-dir /var/lib/postgresql --shell /bin/sh postgres ||
        { refine_pg_fail "no postgres user, and useradd failed"; return 1; }
    fi
    if command -v runuser >/dev/null 2>&1; then
      as=(runuser -u postgres --)
    else
      as=(refine_pg_su)
    fi
  fi

  # As root, in /tmp: the postgres user may not reach root's $TMPDIR.
  local tmp=${TMPDIR:-/tmp}
  if [ "$(id -u)" -eq 0 ]; then
    tmp=/tmp
  fi
  REFINE_PG_DIR=$(mktemp -d "$tmp/refine-pg.XXXXXX") || { refine_pg_fail "mktemp failed"; return 1; }
  chmod 0755 "$REFINE_PG_DIR"
  mkdir "$REFINE_PG_DIR/data" "$REFINE_PG_DIR/run"
  if [ "$(id -u)" -eq 0 ]; then
    chown -R postgres: "$REFINE_PG_DIR"
  fi
  REFINE_PG_BIN=$bindir
  REFINE_PG_AS=("${as[@]}")
  trap 'refine_pg_stop; '"$(trap -p EXIT | sed -e "s/^trap -- '//" -e "s/' EXIT\$//")" EXIT

  "${as[@]}" "$bindir/initdb" -D "$REFINE_PG_DIR/data" -U postgres --auth=trust \
    --encoding=UTF8 --no-sync >"$REFINE_PG_DIR/initdb.log" 2>&1 ||
    { cat "$REFINE_PG_DIR/initdb.log" >&2; refine_pg_fail "initdb failed"; return 1; }

  local port started=""
  for port in $(seq 54329 54429); do
    # A port someone listens on is skipped without trying.
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      continue
    fi
    if "${as[@]}" "$bindir/pg_ctl" -D "$REFINE_PG_DIR/data" -l "$REFINE_PG_DIR/server.log" -w -t 30 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $REFINE_PG_DIR/run -c fsync=off -c max_connections=200" \
      start >/dev/null 2>&1; then
      started=$port
      break
    fi
  done
  if [ -z "$started" ]; then
    cat "$REFINE_PG_DIR/server.log" >&2 2>/dev/null
    refine_pg_fail "could not start the server on any port from 54329 to 54429"
    return 1
  fi
  REFINE_PG_PORT=$started

  # A script that restarts the server as a crash would (tests of what
  # survives a server restart): an immediate stop, a pause of $1 seconds
  # (default 3), a start with the same options.
  local as_q=""
  if [ ${#as[@]} -gt 0 ]; then as_q=$(printf '%q ' "${as[@]}"); fi
  cat >"$REFINE_PG_DIR/restart.sh" <<RESTART
#!/usr/bin/env bash
set -eu
$as_q$(printf '%q' "$bindir/pg_ctl") -D $(printf '%q' "$REFINE_PG_DIR/data") -m immediate -w stop >/dev/null
sleep "\${1:-3}"
$as_q$(printf '%q' "$bindir/pg_ctl") -D $(printf '%q' "$REFINE_PG_DIR/data") -l $(printf '%q' "$REFINE_PG_DIR/server.log") -w -t 30 \\
  -o $(printf '%q' "-c listen_addresses=127.0.0.1 -p $started -k $REFINE_PG_DIR/run -c fsync=off -c max_connections=200") start >/dev/null
RESTART
  chmod 0755 "$REFINE_PG_DIR/restart.sh"
  export REFINE_PG_RESTART="$REFINE_PG_DIR/restart.sh"

  local i
  for i in $(seq 1 100); do
    if "$(refine_pg_tool pg_isready)" -q -h 127.0.0.1 -p "$started" 2>/dev/null; then
      break
    fi
    sleep 0.1
  done
  "$(refine_pg_tool psql)" -q -h 127.0.0.1 -p "$started" -U postgres -d postgres \
    -c 'CREATE DATABASE refine' >/dev/null ||
    { refine_pg_fail "creating the database failed"; return 1; }

  export REFINE_PG_URL="postgres://postgres@127.0.0.1:$started/refine?sslmode=disable"
  export REFINE_PG_REQUIRED=1
  echo "postgres.sh: $("$bindir/pg_ctl" --version) on 127.0.0.1:$started, data in $REFINE_PG_DIR"
}

# refine_pg_su runs its arguments as the postgres user through su.
refine_pg_su() {
  su postgres -s /bin/sh -c "$(printf '%q ' "$@")"
}

# refine_pg_tool prints the path of a client program: the one beside pg_ctl,
# else the one in PATH.
refine_pg_tool() {
  if [ -x "$REFINE_PG_BIN/$1" ]; then
    echo "$REFINE_PG_BIN/$1"
  else
    command -v "$1"
  fi
}

refine_pg_stop() {
  if [ -n "${REFINE_PG_DIR:-}" ] && [ -d "$REFINE_PG_DIR" ]; then
    if [ -f "$REFINE_PG_DIR/data/postmaster.pid" ]; then
      "${REFINE_PG_AS[@]}" "$REFINE_PG_BIN/pg_ctl" -D "$REFINE_PG_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$REFINE_PG_DIR"
  fi
  REFINE_PG_DIR=
}

refine_pg_start
