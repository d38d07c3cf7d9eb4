print("flowsync-mirror: not yet built")
