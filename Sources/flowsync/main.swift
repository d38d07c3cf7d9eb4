print("flowsync: not yet built")
