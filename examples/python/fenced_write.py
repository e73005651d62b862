"""Guards a file write with a fencing token. The file keeps the highest token it accepted and
refuses a lower one, so a holder that lost its lease (paused, partitioned) and writes late
cannot clobber the work of the next holder (contract §8)."""

import sys
from pathlib import Path

import tenure


class FencedFile:
    """The guarded resource."""

    def __init__(self, path: str) -> None:
        self.data, self.fence = Path(path), Path(path + ".token")

    def write(self, token: int, text: str) -> bool:
        highest = int(self.fence.read_text()) if self.fence.exists() else 0
        if token < highest:
            return False  # a stale holder
        self.data.write_text(text)
        self.fence.write_text(str(token))
        return True


def main() -> int:
    file = FencedFile(sys.argv[1] if len(sys.argv) > 1 else "report.txt")
    client = tenure.Client()  # $TENURE_SOCKET, else the per-user or system socket
    watch = client.watch(prefix="example/")

    first = None
    for text in ("first draft", "final"):
        with client.lease("example/report", ttl="15s", wait="5s") as lease:
            first = first or lease.token
            written = bool(lease.check()) and file.write(lease.token, text)
            print(f'token {lease.token} writes "{text}": {"accepted" if written else "rejected"}')
    stale = file.write(first, "late write")
    print(f"token {first} writes late: {'accepted' if stale else 'rejected'}")

    for _ in range(4):
        event = watch.next(timeout="5s")
        print(f"event {event.type} {event.key} token {event.token}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
