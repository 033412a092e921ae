# Sourced by tools/install_deps.sh and tools/ci/cuda12_toolkit.sh; names no host.
#
# apt_mirror SUITE prints the archive URI apt's own configuration uses for SUITE (for example
# bookworm), or nothing when no source names it: deb822 files (URIs: ... with Suites: SUITE)
# first, then one-line "deb [options] URI SUITE ..." entries. The scripts take their mirror
# from here, so they work behind whatever mirror or proxy the machine is set up with.
apt_mirror() {
  local suite=$1 f uri
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    uri=$(awk -v suite="$suite" '
      /^URIs:/ { uris = $2 }
      /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) hit = 1 }
      /^$/ { if (hit && uris != "") { print uris; exit } hit = 0; uris = "" }
      END { if (hit && uris != "") print uris }' "$f" | head -n1)
    [ -n "$uri" ] && { echo "$uri"; return; }
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -r "$f" ] || continue
    uri=$(awk -v suite="$suite" '$1 == "deb" {
        i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
        if ($(i + 1) == suite) { print $i; exit } }' "$f")
    [ -n "$uri" ] && { echo "$uri"; return; }
  done
  return 0
}
