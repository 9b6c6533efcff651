# SPDX-License-Identifier: MIT
# bash completion for fhashctl: verbs, options per verb, algorithm names, files

_fhashctl()
{
    local cur prev words cword
    _init_completion -s || return

    local verbs="hash check audit jobs watch cancel status algorithms"
    local global="--local --daemon --system --user --address --no-direct --help --version"
    local -A opts=(
        [audit]="-a --algorithm -q --quiet --status --json --update --progress --no-progress --no-cache --io"
        [hash]="-a --algorithm -r --recursive --exclude --follow --one-file-system --tag --untagged -b --binary -t --text --no-names --raw -l --length --keyed --derive-key --block-size -c --check -z --zero --json --progress --no-progress --no-cache --io"
        [check]="-a --algorithm -l --length --ignore-missing -q --quiet --status --strict -w --warn -z --zero --json --progress --no-progress --no-cache --io"
        [watch]="--progress --no-progress"
    )

    # "fhashctl --as TOOL ...": fhashctl is that tool (first argument only); its arguments are files.
    local tools="md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum cksum sum b3sum xxhsum xxh32sum xxh64sum xxh128sum xxh3sum"
    if ((cword == 1)) && [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$global --as" -- "$cur"))
        return
    fi
    if ((cword == 2)) && [[ $prev == --as ]]; then
        COMPREPLY=($(compgen -W "$tools" -- "$cur"))
        return
    fi
    if ((cword > 2)) && [[ ${words[1]} == --as ]]; then
        _filedir
        return
    fi

    case $prev in
        -a | --algorithm)
            # Several in one read: "sha256,bl<TAB>" completes the name after the last comma.
            local head="" last=$cur
            [[ $cur == *,* ]] && head=${cur%,*}, last=${cur##*,}
            COMPREPLY=($(compgen -P "$head" -W "$(fhashctl algorithms 2>/dev/null ||
                echo sha256 sha512 sha1 md5 sha3-256 blake2b blake3 xxh3 xxh128 crc32c)" -- "$last"))
            return ;;
        --io)
            COMPREPLY=($(compgen -W "auto read mmap direct" -- "$cur"))
            return ;;
        --exclude)
            return ;;
        --address)
            COMPREPLY=($(compgen -W "unix:path=" -- "$cur"))
            compopt -o nospace
            return ;;
    esac
    [[ $cur == *=* && $prev == --* ]] && return

    local verb="" i
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            -a | --algorithm | --exclude | --address | --io) ((i++)) ;;
            -*) ;;
            *) verb=${words[i]}; break ;;
        esac
    done

    if [[ -z $verb ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "$global" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$verbs" -- "$cur"))
        fi
        return
    fi

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "${opts[$verb]} $global" -- "$cur"))
        return
    fi
    case $verb in
        hash | check | audit) _filedir ;;
        watch | cancel)
            COMPREPLY=($(compgen -W "$(fhashctl jobs 2>/dev/null | awk 'NR > 1 { print $1 }')" -- "$cur")) ;;
    esac
} &&
    complete -F _fhashctl fhashctl
