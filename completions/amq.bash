# bash completion for amq (installed by `make install` as
# $(datadir)/bash-completion/completions/amq).  Commands come from
# `amq --help`, options from `amq COMMAND --help`, the names of kinds,
# formats and hashes from `amq help kinds|formats|hashes`, so that completion
# follows the installed tool without a list to keep up to date.

_amq_commands() {
    amq --help 2>/dev/null | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p'
}

_amq_options() {
    amq "$1" --help 2>/dev/null | grep -oE -- '(^|[ [,])--[a-z][a-z0-9-]*' |
        sed 's/^[ [,]*//' | sort -u
}

_amq() {
    local cur prev cmd
    COMPREPLY=()
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$(_amq_commands) --help --version" -- "$cur"))
        return 0
    fi
    cmd=${COMP_WORDS[1]}
    case "$prev" in
    --type)
        COMPREPLY=($(compgen -W "$(amq help kinds 2>/dev/null)" -- "$cur"))
        return 0 ;;
    --hash)
        COMPREPLY=($(compgen -W "$(amq help hashes 2>/dev/null)" -- "$cur"))
        return 0 ;;
    --algo)
        COMPREPLY=($(compgen -W "murmur3_128 murmur3_32 murmur64a fnv1a32 fnv1a64 xxh3" -- "$cur"))
        return 0 ;;
    --from|--to)
        COMPREPLY=($(compgen -W "$(amq help formats 2>/dev/null)" -- "$cur"))
        return 0 ;;
    --capacity|--fpp|--seed|--threads|--bits|--hashes|--bits-per-key|--bucket-size|\
    --fingerprint-bits|--max-kicks|--expansion|--partitions)
        return 0 ;;
    esac
    if [ "${cur#-}" != "$cur" ]; then
        COMPREPLY=($(compgen -W "$(_amq_options "$cmd")" -- "$cur"))
        return 0
    fi
    COMPREPLY=($(compgen -f -- "$cur"))
    return 0
}

complete -o filenames -F _amq amq
