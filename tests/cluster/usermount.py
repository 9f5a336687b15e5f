# What fusermount3 does for a user where /dev/fuse is open to users (not in
# these containers): a FUSE mount at argv[1] of uid argv[2] (user_id=, no
# allow_other), served by nobody (its descriptor closed: "not connected").
# Run as root by test_cluster_fs_attack.sh.
import ctypes, os, sys
mnt, uid = sys.argv[1], int(sys.argv[2])
fd = os.open("/dev/fuse", os.O_RDWR)
libc = ctypes.CDLL(None, use_errno=True)
opts = "fd=%d,rootmode=40000,user_id=%d,group_id=%d" % (fd, uid, uid)
MS_NOSUID, MS_NODEV = 2, 4
if libc.mount(b"atk", mnt.encode(), b"fuse.atk", MS_NOSUID | MS_NODEV, opts.encode()) != 0:
    e = ctypes.get_errno()
    sys.exit("mount: " + os.strerror(e))
os.close(fd)
print("mounted")
