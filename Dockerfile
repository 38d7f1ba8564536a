# lockledger in a container: the static binary on distroless (CA
# certificates for HTTPS witnesses and PostgreSQL over TLS, a passwd entry
# for the actor's name, nothing else), run as a non-root user, with its
# root on a volume.
#
#   docker build -t lockledger .
#   docker run --rm -v lockledger:/var/lib/lockledger lockledger init
#   docker run --rm -v lockledger:/var/lib/lockledger lockledger list
#
# The version is the release tag of the checkout (scripts/version.sh, as
# make build stamps it), or --build-arg VERSION=v0.3.0.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION
RUN version=${VERSION:-$(bash scripts/version.sh)} && \
    commit=$(git rev-parse HEAD 2>/dev/null || true) && \
    CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w ${version:+-X github.com/lockledger/lockledger/cli.buildVersion=$version} ${commit:+-X github.com/lockledger/lockledger/cli.buildCommit=$commit}" \
      -o /out/lockledger . && \
    install -d -m 0700 /out/root

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/lockledger /usr/local/bin/lockledger
# The root belongs to the user that writes it, and no one else may write
# it; a named volume starts as this directory. A bind mount must belong to
# uid 65532 (or pass --user with the owner's uid).
COPY --from=build --chown=65532:65532 /out/root /var/lib/lockledger
USER 65532:65532
ENV LOCKLEDGER_ROOT=/var/lib/lockledger
VOLUME ["/var/lib/lockledger"]
ENTRYPOINT ["/usr/local/bin/lockledger"]
CMD ["--help"]
