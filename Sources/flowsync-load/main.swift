print("flowsync-load: not yet built")
