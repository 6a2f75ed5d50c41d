# The declared module graph (CMakeLists.txt writes it to graph.txt, one
# "module: deps..." line each), for check_symbols.sh and check_includes.sh.
# Sourced: read_graph FILE fills the associative array `deps`; closure M
# prints M and every module it may use, space-separated.
declare -A deps
read_graph() {
  local m d
  while IFS=: read -r m d; do [ -n "$m" ] && deps[$m]=$d; done < "$1"
}
closure() {
  local seen=" $1 " queue=("$1") m d
  while [ ${#queue[@]} -gt 0 ]; do
    m=${queue[0]}; queue=("${queue[@]:1}")
    for d in ${deps[$m]:-}; do
      case "$seen" in *" $d "*) ;; *) seen+="$d "; queue+=("$d");; esac
    done
  done
  echo "$seen"
}
